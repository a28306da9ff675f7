"""Statistics for comparing automatic RAG metrics with human ratings.

Pure functions over numpy arrays: no database, no HTTP. Every result is a small frozen dataclass; a
statistic that cannot be computed (too few pairs, constant input, degenerate bootstrap) has ``None`` in
place of the number and a human-readable ``undefined_reason``, so a report never shows a made-up figure or
a NaN.

One module per topic, each name below importable from the package:

- ``correlations``: Pearson, Spearman, Kendall with analytic, bootstrap and jackknife intervals;
- ``comparisons``: differences of two correlations (bootstrap, jackknife, Williams, Steiger, Zou), Holm and
  Benjamini-Hochberg, the items needed to separate two correlations;
- ``interrater``: Krippendorff's alpha, ICC, quadratic kappa, rater pairs, the attenuation ceiling;
- ``passfail``: AUC, the Youden threshold and the held-out decision figures;
- ``systems``: pairwise preferences and the ranking of systems;
- ``ppi``: the plain prediction-powered mean;
- ``stability``: a judge's test-retest over repeated askings, the agreement corrected for both sides'
  noise;
- ``calibration``: cross-fitted isotonic calibration onto the rubric, held-out MAE/RMSE, the human baseline;
- ``alttest``: the Alternative Annotator Test (may a metric replace a rater?);
- ``resampling``, ``corr_kernels``, ``ranks``, ``core``: the bootstrap and jackknife engine, the resample
  kernels, tie groups and ranks, and the input checks they share.

Importing the package stays cheap: the heavy libraries load inside the functions that use them, and
``warm_up()`` loads them ahead of time.
"""

from services.stats.alttest import (
    DEFAULT_EPSILON,
    AltTestResult,
    RaterTest,
    alt_test,
)
from services.stats.calibration import (
    CalibrationResult,
    CurvePoint,
    ErrorFigure,
    HumanBaseline,
    QuestionIndex,
    calibrate,
    human_baseline,
    question_folds,
)
from services.stats.comparisons import (
    DependentComparison,
    DifferenceTest,
    adjust_p_values,
    bootstrap_difference_ci,
    bootstrap_differences_many,
    compare_correlations,
    jackknife_differences_many,
    mover_ci,
    n_needed_to_separate,
    rank_difference,
    steiger_z,
    williams_t,
    zou_c,
    zou_ci,
)
from services.stats.core import (
    CONSTANT_RTOL,
    NEAR_CONSTANT_MIN_OFF_MODE,
    CorrMethod,
    complete_pairs,
    near_constant,
    warm_up,
)
from services.stats.corr_kernels import KendallKernel, SpearmanKernel, correlation_kernel
from services.stats.correlations import (
    CiChoice,
    CorrelationResult,
    bootstrap_ci,
    bootstrap_ci_many,
    correlation,
    correlations_many,
    fisher_ci,
    fisher_ci_width,
    jackknife_ci_many,
    kendall,
    kendall_tie_factor,
    pearson,
    spearman,
)
from services.stats.interrater import (
    AgreementResult,
    AlphaLevel,
    AlphaResult,
    IccResult,
    RaterPair,
    agreement,
    icc_results,
    ordinal_alpha_resamples,
)
from services.stats.passfail import (
    HELD_OUT_FIGURES,
    PASS_FAIL_FIGURES,
    Interval,
    PassFailKernel,
    PassFailResult,
    default_pass_threshold,
    delong_auc,
    pass_fail,
    pass_fail_many,
)
from services.stats.ppi import PpiResult, ppi_mean
from services.stats.ranks import concordance_per_item, concordance_per_item_numpy
from services.stats.reference import reference_or_nan
from services.stats.resampling import (
    BootstrapCI,
    BootstrapKind,
    JackknifeCI,
    bootstrap_distribution,
    bootstrap_limits,
    bootstrap_p_value,
    expanded_confidence,
    resample_counts,
    units_of,
)
from services.stats.stability import (
    DISATTENUATION_RULE,
    CorrectedAgreement,
    RetestResult,
    corrected_agreement,
    disattenuate,
    retest,
    spearman_brown,
)
from services.stats.systems import (
    PreferenceResult,
    SystemLevelResult,
    pair_mean_labels,
    preference_agreement,
    system_level,
)

__all__ = [
    "CONSTANT_RTOL",
    "DEFAULT_EPSILON",
    "DISATTENUATION_RULE",
    "HELD_OUT_FIGURES",
    "NEAR_CONSTANT_MIN_OFF_MODE",
    "PASS_FAIL_FIGURES",
    "AgreementResult",
    "AlphaLevel",
    "AlphaResult",
    "AltTestResult",
    "BootstrapCI",
    "BootstrapKind",
    "CalibrationResult",
    "CiChoice",
    "CorrMethod",
    "CorrectedAgreement",
    "CorrelationResult",
    "CurvePoint",
    "DependentComparison",
    "DifferenceTest",
    "ErrorFigure",
    "HumanBaseline",
    "IccResult",
    "Interval",
    "JackknifeCI",
    "PassFailResult",
    "PpiResult",
    "PreferenceResult",
    "QuestionIndex",
    "RaterPair",
    "RaterTest",
    "RetestResult",
    "SystemLevelResult",
    "adjust_p_values",
    "agreement",
    "alt_test",
    "bootstrap_ci",
    "bootstrap_ci_many",
    "bootstrap_difference_ci",
    "bootstrap_differences_many",
    "bootstrap_p_value",
    "calibrate",
    "compare_correlations",
    "complete_pairs",
    "corrected_agreement",
    "correlation",
    "correlations_many",
    "default_pass_threshold",
    "delong_auc",
    "disattenuate",
    "expanded_confidence",
    "fisher_ci",
    "fisher_ci_width",
    "human_baseline",
    "jackknife_ci_many",
    "jackknife_differences_many",
    "kendall",
    "kendall_tie_factor",
    "mover_ci",
    "n_needed_to_separate",
    "near_constant",
    "ordinal_alpha_resamples",
    "pair_mean_labels",
    "pass_fail",
    "pass_fail_many",
    "pearson",
    "ppi_mean",
    "preference_agreement",
    "question_folds",
    "rank_difference",
    "retest",
    "spearman",
    "spearman_brown",
    "steiger_z",
    "system_level",
    "warm_up",
    "williams_t",
    "zou_ci",
]

# Former private names that the unit tests still reach; the public names live in the submodules.
_KendallKernel = KendallKernel
_SpearmanKernel = SpearmanKernel
_PassFailKernel = PassFailKernel
_kernel = correlation_kernel
_reference_or_nan = reference_or_nan
_resample_counts = resample_counts
_bootstrap_distribution = bootstrap_distribution
_interval = bootstrap_limits
_units = units_of
_zou_c = zou_c
_icc_results = icc_results
_concordance_per_item = concordance_per_item
_concordance_per_item_numpy = concordance_per_item_numpy
