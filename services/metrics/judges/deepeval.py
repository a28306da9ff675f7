"""DeepEval metrics, computed by DeepEval's own metric classes with the judge gateway as their LLM.

Each registry metric is one DeepEval class, measured per sample with ``await metric.a_measure(test_case)``
(``include_reason=True``, ``async_mode=True``, ``eval_mode="llm"``, threshold unused). Judge calls per sample:

    deepeval.hallucination         HallucinationMetric        2      verdicts over all contexts, reason
    deepeval.answer_relevancy      AnswerRelevancyMetric      3      statements, verdicts, reason
    deepeval.faithfulness          FaithfulnessMetric         4      truths + claims at once, verdicts, reason
    deepeval.contextual_precision  ContextualPrecisionMetric  2      verdicts, reason
    deepeval.contextual_recall     ContextualRecallMetric     2      verdicts, reason
    deepeval.contextual_relevancy  ContextualRelevancyMetric  k + 1  one verdict call per context, reason

The reason call costs one call per sample; it is kept because it is the library's explanation of the score
(``details["explanation"]``). Values are on DeepEval's 0-1 scale, described per metric in
``details["scale"]``. Hallucination: since DeepEval 4 its score is the share of contexts the answer does NOT
contradict (1 = no hallucination, higher is better); the registry's "share of contexts contradicted, lower is
better" describes DeepEval 3.

The judge is a small ``DeepEvalBaseLLM``. DeepEval's ``LocalModel`` builds a new OpenAI client (and TLS
context) on every request, which made it CPU-bound (LIBRARIES.md section 9); here one HTTP connection pool
is opened per ``compute`` and shared by light per-sample OpenAI clients, each pointed at the sample's gateway
URL.

Structured output: requests carry ``response_format`` ``json_schema`` built from the pydantic schema DeepEval
passes, and the reply is validated against that schema, so the metric takes its strict path. DeepEval's loose
path (plain text + ``trimAndLoadJson``) silently drops a verdict outside yes/no/borderline and scores what is
left: a judge prompted in French that answers "oui" would shift scores without any error. So it is never
taken: a reply that is not bare JSON (a server ignoring ``response_format``, code fences) is read with
``trimAndLoadJson``, its verdict words normalised as DeepEval does ("Yes." -> yes), and validated against the
schema; a reply that still does not fit fails the sample (``malformed_judge_output``). If the server rejects
``response_format`` (HTTP 400) the adapter retries that call once as plain text and keeps plain text for its
remaining calls.

Never a number from nothing: DeepEval scores an empty verdict list 1 (faithfulness, answer relevancy,
hallucination) or 0 (contextual precision, recall, relevancy), and scores whatever verdicts it got when the
judge gave fewer than it was asked for. After each measure the adapter checks one verdict per claim,
statement or context (``_undefined``): a different count fails the sample, and an answer without any claim
or statement, or a reference without any sentence, is stored undefined with that reason.

Prompts: for French datasets every prompt these six metrics send (15 templates) runs translated, through
``evaluation_template`` subclasses; JSON keys and the verdict words (yes / no / borderline) stay English
because DeepEval parses them. Other languages, and multimodal test cases (never built here), keep DeepEval's
English prompts. No DeepEval metric keeps English prompts for French.

Offline and files: the offline environment (``services.offline``: DEEPEVAL_TELEMETRY_OPT_OUT,
DEEPEVAL_DISABLE_DOTENV...) is applied before DeepEval is first imported. Without the opt-out, importing
DeepEval creates ``./.deepeval/`` in the working directory; with it, calling ``a_measure`` directly (no
``deepeval.evaluate``, so no test run and no ``.deepeval-cache.json``) writes no file at all (checked with an
empty working directory and HOME). Caching is the gateway's, not DeepEval's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.metrics.base import Sample, SampleScore
from services.metrics.judges.base import JudgeAdapter
from services.offline import apply_offline_env

if TYPE_CHECKING:
    import httpx

# The gateway holds the real key; the SDK only refuses an empty one.
_API_KEY = "ragmeta-gateway"
_EXPLANATION_CHARS = 1000


@dataclass(frozen=True)
class _Metric:
    cls: str  # class in deepeval.metrics
    needs_answer: bool
    scale: str


_METRICS: dict[str, _Metric] = {
    "hallucination": _Metric(
        "HallucinationMetric",
        True,
        "0-1, share of the contexts the answer does not contradict (DeepEval >= 4: 1 = no hallucination)",
    ),
    "answer_relevancy": _Metric(
        "AnswerRelevancyMetric", True, "0-1, share of the answer's statements relevant (or borderline)"
    ),
    "faithfulness": _Metric(
        "FaithfulnessMetric", True, "0-1, share of the answer's claims not contradicted by the contexts"
    ),
    "contextual_precision": _Metric(
        "ContextualPrecisionMetric",
        False,
        "0-1, rank-weighted precision of the contexts useful for the reference",
    ),
    "contextual_recall": _Metric(
        "ContextualRecallMetric",
        False,
        "0-1, share of the reference's sentences attributable to the contexts",
    ),
    "contextual_relevancy": _Metric(
        "ContextualRelevancyMetric", False, "0-1, share of the contexts' statements relevant to the question"
    ),
}


# --------------------------------------------------------------------------------------------- prompts (fr)
# Text-only renderings of DeepEval 4.3.1's templates (deepeval/templates/metrics/templates.json) with the
# variables the metrics pass; the English-only helper variables (limit phrases, "sentence", document counts)
# are written out in French instead.
_FR: dict[str, dict[str, str]] = {
    "HallucinationMetric": {
        "generate_verdicts": """\
Pour chaque contexte de la liste de contextes (une liste de chaînes), produisez un objet JSON indiquant \
si la « réponse produite » concorde avec CE contexte. Chaque objet JSON a 2 champs : 'verdict' et \
'reason'.

La clé 'verdict' doit valoir STRICTEMENT 'yes' ou 'no' (en anglais, sans traduction) et indique si le \
texte fourni concorde avec le contexte.
La clé 'reason' donne la raison du verdict. Lorsque le verdict est 'no', essayez de proposer une \
correction dans la raison.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'verdicts' associée à une liste d'objets JSON.
Exemple de contextes : ["Einstein a reçu le prix Nobel pour sa découverte de l'effet photoélectrique.", \
"Einstein a reçu le prix Nobel en 1968."]
Exemple de réponse produite : "Einstein a reçu le prix Nobel en 1969 pour sa découverte de l'effet \
photoélectrique."

Exemple :
{
  "verdicts": [
    {
      "reason": "La réponse concorde avec le contexte, qui indique qu'Einstein a reçu le prix Nobel \
pour sa découverte de l'effet photoélectrique.",
      "verdict": "yes"
    },
    {
      "reason": "La réponse contredit le contexte, qui indique qu'Einstein a reçu le prix Nobel en \
1968, et non en 1969.",
      "verdict": "no"
    }
  ]
}

Vous ne devez PAS utiliser de connaissances préalables : prenez chaque contexte au pied de la lettre. \
Comme vous produisez un verdict par contexte, le nombre de 'verdicts' DOIT ÊTRE STRICTEMENT ÉGAL À {{ \
contexts_count }}.
Vous devez PARDONNER les cas où la réponse manque de détails ; ne répondez 'no' QUE s'il s'agit D'UNE \
CONTRADICTION.
Rédigez les raisons en français.
**

Contextes :
{{ contexts }}

Réponse produite :
{{ actual_output }}

JSON:
""",
        "generate_reason": """\
À partir d'une liste de concordances factuelles et de contradictions entre la « réponse produite » et \
les « contextes », donnez de façon CONCISE la raison du score d'hallucination. Le score d'hallucination \
va de 0 à 1 et mesure à quel point la réponse produite concorde avec les contextes : plus il est élevé, \
mieux c'est.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français.
Exemple de JSON :
{
  "reason": "Le score est de <score_d_hallucination> parce que <votre_raison>."
}
**

Concordances factuelles :
{{ factual_alignments }}

Contradictions :
{{ contradictions }}

Score d'hallucination :
{{ score }}

JSON:
""",
    },
    "AnswerRelevancyMetric": {
        "generate_statements": """\
À partir du texte fourni, décomposez-le en la liste des affirmations qu'il présente. Les affirmations \
ambiguës et les mots isolés peuvent compter comme des affirmations, mais seulement s'ils ne font pas \
partie d'une affirmation cohérente.

Exemple :
Exemple de texte :
Notre nouveau modèle d'ordinateur portable est doté d'un écran Retina haute résolution pour des images \
d'une grande netteté. Il comprend aussi une batterie à charge rapide offrant jusqu'à 12 heures \
d'autonomie. Pour la sécurité, nous avons ajouté l'authentification par empreinte digitale et un SSD \
chiffré. De plus, chaque achat est assorti d'une garantie d'un an et d'une assistance client 24 h/24 et \
7 j/7.

{
  "statements": [
    "Le nouveau modèle d'ordinateur portable a un écran Retina haute résolution.",
    "Il comprend une batterie à charge rapide offrant jusqu'à 12 heures d'autonomie.",
    "Les fonctions de sécurité comprennent l'authentification par empreinte digitale et un SSD chiffré.",
    "Chaque achat est assorti d'une garantie d'un an.",
    "Une assistance client 24 h/24 et 7 j/7 est incluse."
  ]
}
===== FIN DE L'EXEMPLE ======

**
IMPORTANT : répondez uniquement en JSON valide et analysable, avec la clé "statements" associée à une \
liste de chaînes, rédigées en français. Aucun mot ni explication n'est nécessaire. Veillez à fermer \
correctement toutes les chaînes. Corrigez tout JSON invalide avant de le produire.
**

Texte :
{{ actual_output }}

JSON:
""",
        "generate_verdicts": """\
Pour la liste d'affirmations fournie, déterminez si chaque affirmation est pertinente pour répondre à \
la question.
Produisez des objets JSON avec les champs 'verdict' et 'reason'.
Le 'verdict' doit valoir 'yes' (pertinente), 'no' (non pertinente) ou 'borderline' (ambiguë / \
information d'appui), en anglais, sans traduction.
Ne donnez une 'reason' QUE pour les verdicts 'no' ou 'borderline'.
Les affirmations proviennent de la réponse produite par une IA.

**
IMPORTANT : répondez uniquement en JSON valide et analysable, avec la clé 'verdicts' associée à une \
liste d'objets JSON. Veillez à fermer correctement toutes les chaînes. Corrigez tout JSON invalide \
avant de le produire.

Format JSON attendu :
{
  "verdicts": [
    {
      "verdict": "yes"
    },
    {
      "reason": <explication_de_la_non_pertinence>,
      "verdict": "no"
    },
    {
      "reason": <explication_de_l_ambiguïté>,
      "verdict": "borderline"
    }
  ]
}

Produisez UN verdict par affirmation : le nombre de 'verdicts' DOIT être égal au nombre d'affirmations.
'verdict' doit valoir STRICTEMENT 'yes', 'no' ou 'borderline' :
- 'yes' : l'affirmation est pertinente pour répondre à la question
- 'no' : l'affirmation n'est pas pertinente pour la question
- 'borderline' : l'affirmation est ambiguë (pas directement pertinente, mais elle pourrait servir \
d'information d'appui)
Ne donnez une 'reason' QUE pour les verdicts 'no' ou 'borderline', rédigée en français.
**

Question :
{{ input }}

Affirmations :
{{ statements }}

JSON:
""",
        "generate_reason": """\
À partir du score de pertinence de la réponse, de la liste des raisons pour lesquelles certaines \
affirmations de la réponse produite ne sont pas pertinentes, et de la question, donnez une raison \
CONCISE pour le score. Expliquez pourquoi il n'est pas plus élevé, mais aussi pourquoi il a sa valeur \
actuelle.
Les affirmations non pertinentes sont les éléments de la réponse produite qui ne répondent pas à ce qui \
est demandé ou abordé dans la question.
S'il n'y a rien de non pertinent, dites simplement quelque chose de positif sur un ton encourageant \
(sans en faire trop, sinon cela devient agaçant).

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français. Veillez à fermer correctement toutes les chaînes. Corrigez tout JSON invalide avant de le \
produire.

Exemple :
Exemple de JSON :
{
  "reason": "Le score est de <score_de_pertinence> parce que <votre_raison>."
}
===== FIN DE L'EXEMPLE ======
**


Score de pertinence de la réponse :
{{ score }}

Raisons pour lesquelles le score ne peut pas être plus élevé (affirmations non pertinentes de la \
réponse produite) :
{{ irrelevant_statements }}

Question :
{{ input }}

JSON:
""",
    },
    "FaithfulnessMetric": {
        "generate_truths": """\
À partir du texte fourni, dressez une liste exhaustive de vérités FACTUELLES et incontestables que l'on \
peut déduire du texte.
Ces vérités DOIVENT ÊTRE COHÉRENTES et ne doivent PAS être sorties de leur contexte.

Exemple :
Exemple de texte :
"Albert Einstein, le génie souvent associé à une chevelure en bataille et à des théories vertigineuses, \
a reçu le prix Nobel de physique, non pas pour ses travaux révolutionnaires sur la relativité, comme \
beaucoup le croient, mais en 1968, pour sa découverte de l'effet photoélectrique, un phénomène qui a \
posé les bases de la mécanique quantique."

Exemple de JSON :
{
  "truths": [
    "Einstein a reçu le prix Nobel pour sa découverte de l'effet photoélectrique en 1968.",
    "L'effet photoélectrique est un phénomène qui a posé les bases de la mécanique quantique."
  ]
}
===== FIN DE L'EXEMPLE ======
**
IMPORTANT : répondez uniquement au format JSON, avec la clé "truths" associée à une liste de chaînes, \
rédigées en français. Aucun mot ni explication n'est nécessaire.
N'incluez que des vérités factuelles, PEU IMPORTE QU'ELLES SOIENT FACTUELLEMENT EXACTES.
**

Texte :
{{ retrieval_context }}

JSON:
""",
        "generate_claims": """\
À partir du texte fourni, extrayez une liste exhaustive d'affirmations FACTUELLES et incontestables que \
l'on peut déduire de la réponse produite par l'IA.
Ces affirmations DOIVENT ÊTRE COHÉRENTES et ne peuvent PAS être sorties de leur contexte.

Exemple :
Exemple de texte :
"Albert Einstein, le génie souvent associé à une chevelure en bataille et à des théories vertigineuses, \
a reçu le prix Nobel de physique, non pas pour ses travaux révolutionnaires sur la relativité, comme \
beaucoup le croient, mais en 1968, pour sa découverte de l'effet photoélectrique, un phénomène qui a \
posé les bases de la mécanique quantique."

Exemple de JSON :
{
  "claims": [
    "Einstein a reçu le prix Nobel pour sa découverte de l'effet photoélectrique en 1968.",
    "L'effet photoélectrique est un phénomène qui a posé les bases de la mécanique quantique."
  ]
}
===== FIN DE L'EXEMPLE ======

**
IMPORTANT : répondez uniquement au format JSON, avec la clé "claims" associée à une liste de chaînes, \
rédigées en français. Aucun mot ni explication n'est nécessaire.
N'incluez que des affirmations factuelles, PEU IMPORTE QU'ELLES SOIENT FACTUELLEMENT EXACTES. Les \
affirmations extraites doivent inclure tout le contexte dans lequel elles ont été présentées, et NON \
des faits choisis isolément.
Vous ne devez PAS utiliser de connaissances préalables : prenez le texte au pied de la lettre pour \
extraire les affirmations.
Gardez à l'esprit que c'est une IA qui produit ces affirmations.
**

Réponse de l'IA :
{{ actual_output }}

JSON:
""",
        "generate_verdicts": """\
À partir des affirmations fournies (une liste de chaînes), produisez une liste d'objets JSON indiquant \
si CHAQUE affirmation contredit des faits du contexte récupéré. Chaque objet JSON a 2 champs : \
'verdict' et 'reason'.
La clé 'verdict' doit valoir STRICTEMENT 'yes', 'no' ou 'borderline' (en anglais, sans traduction) et \
indique si l'affirmation concorde avec le contexte.
Ne donnez une 'reason' QUE si le verdict est 'no' ou 'borderline'.
Les affirmations proviennent de la réponse produite. Essayez de proposer une correction dans la raison \
à partir des faits du contexte récupéré.

Format JSON attendu :
{
  "verdicts": [
    {
      "verdict": "yes"
    },
    {
      "reason": <explication_de_la_contradiction>,
      "verdict": "no"
    },
    {
      "reason": <explication_de_l_incertitude>,
      "verdict": "borderline"
    }
  ]
}

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'verdicts' associée à une liste d'objets JSON.
Produisez UN verdict par affirmation : la longueur de 'verdicts' DOIT être égale au nombre d'affirmations.
Aucune 'reason' n'est nécessaire pour les verdicts 'yes'.
N'utilisez 'no' que si le contexte récupéré CONTREDIT DIRECTEMENT l'affirmation ; n'utilisez jamais de \
connaissances préalables.
Utilisez 'borderline' pour les affirmations non étayées par le contexte OU factuellement inexactes sans \
être contradictoires ; ne présumez pas de vos connaissances.
Un langage vague ou spéculatif dans les affirmations (par ex. « pourrait avoir », « possibilité ») ne \
constitue PAS une contradiction.
Rédigez les raisons en français.
**

Contextes récupérés :
{{ retrieval_context }}

Affirmations :
{{ claims }}

JSON:
""",
        "generate_reason": """\
Voici une liste de contradictions : des chaînes expliquant pourquoi la « réponse produite » ne concorde \
pas avec les informations du « contexte récupéré ». Les contradictions se trouvent dans la réponse \
produite, PAS dans le contexte récupéré.
Étant donné le score de fidélité, un score de 0 à 1 indiquant à quel point la réponse produite est \
fidèle au contexte récupéré (plus il est élevé, mieux c'est), résumez de façon CONCISE les \
contradictions pour justifier le score.

Format JSON attendu :
{
  "reason": "Le score est de <score_de_fidélité> parce que <votre_raison>."
}

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français.

S'il n'y a aucune contradiction, dites simplement quelque chose de positif sur un ton encourageant \
(sans en faire trop, sinon cela devient agaçant).
Votre raison DOIT utiliser les informations des contradictions.
Exprimez-vous avec assurance, comme si vous connaissiez la réponse produite à partir des contradictions.
**

Score de fidélité :
{{ score }}

Contradictions :
{{ contradictions }}

JSON:
""",
    },
    "ContextualPrecisionMetric": {
        "generate_verdicts": """\
À partir de la question, de la réponse attendue et du contexte récupéré, produisez une liste d'objets \
JSON indiquant si chaque nœud du contexte récupéré a été ne serait-ce qu'un peu utile pour parvenir à \
la réponse attendue.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'verdicts' associée à une liste d'objets \
JSON. Ces objets ne contiennent que la clé `verdict`, qui vaut uniquement 'yes' ou 'no' (en anglais, \
sans traduction), et une clé `reason` qui justifie le verdict. Dans votre raison, citez si possible des \
parties du contexte. Rédigez les raisons en français.
Exemple de contexte récupéré : ["Einstein a reçu le prix Nobel pour sa découverte de l'effet \
photoélectrique.", "Il a reçu le prix Nobel en 1968.", "Il y avait un chat."]
Exemple de question : "Qui a reçu le prix Nobel en 1968, et pour quoi ?"
Exemple de réponse attendue : "Einstein a reçu le prix Nobel en 1968 pour sa découverte de l'effet \
photoélectrique."

Exemple :
{
  "verdicts": [
    {
      "reason": "Il répond clairement à la question en indiquant qu'« Einstein a reçu le prix Nobel \
pour sa découverte de l'effet photoélectrique ».",
      "verdict": "yes"
    },
    {
      "reason": "Le texte confirme que le prix a bien été reçu en 1968.",
      "verdict": "yes"
    },
    {
      "reason": "« Il y avait un chat » n'a aucun rapport avec l'obtention d'un prix Nobel.",
      "verdict": "no"
    }
  ]
}
Comme vous produisez un verdict par contexte, le nombre de 'verdicts' DOIT ÊTRE STRICTEMENT ÉGAL au \
nombre de contextes.
**

Question :
{{ input }}

Réponse attendue :
{{ expected_output }}

Contexte récupéré ({{ context_to_display | length }} document{% if context_to_display | length > 1 \
%}s{% endif %}) :
{{ context_to_display }}

JSON:
""",
        "generate_reason": """\
À partir de la question, des contextes récupérés et du score de précision contextuelle, donnez un \
résumé CONCIS justifiant le score. Expliquez pourquoi il n'est pas plus élevé, mais aussi pourquoi il a \
sa valeur actuelle.
Les contextes récupérés sont une liste d'objets JSON à trois clés : `verdict`, `reason` (la raison du \
verdict) et `node`. `verdict` vaut 'yes' ou 'no' et indique si le 'node' correspondant du contexte \
récupéré est pertinent pour la question.
La précision contextuelle mesure si les nœuds pertinents sont classés plus haut que les nœuds non \
pertinents. Notez aussi que les contextes récupérés sont donnés DANS L'ORDRE DE LEUR CLASSEMENT.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français.
Exemple de JSON :
{
  "reason": "Le score est de <score_de_précision_contextuelle> parce que <votre_raison>."
}


NE mentionnez PAS le mot 'verdict' dans votre raison ; parlez plutôt de nœuds non pertinents. Le terme \
'verdict' n'est là que pour vous aider à comprendre l'ensemble.
NE mentionnez PAS non plus l'existence de champs `reason` dans les contextes récupérés ; utilisez \
simplement leur contenu.
Dans votre raison, vous DEVEZ UTILISER la `reason`, des CITATIONS de la 'reason' et le RANG du nœud (à \
partir de 1, par ex. premier nœud) pour expliquer pourquoi les verdicts 'no' devraient être classés \
plus bas que les verdicts 'yes'.
Lorsque vous parlez des nœuds, précisez explicitement qu'il s'agit de nœuds des contextes récupérés.
Si le score vaut 1, restez bref et dites quelque chose de positif sur un ton enjoué (sans en faire \
trop, sinon cela devient agaçant).
**

Score de précision contextuelle :
{{ score }}

Question :
{{ input }}

Contextes récupérés :
{{ verdicts }}

JSON:
""",
    },
    "ContextualRecallMetric": {
        "generate_verdicts": """\
Pour CHAQUE phrase de la réponse attendue ci-dessous, déterminez si la phrase peut être attribuée aux \
nœuds du contexte récupéré. Produisez une liste d'objets JSON à deux clés : `verdict` et `reason`.
La clé `verdict` doit valoir STRICTEMENT 'yes' ou 'no' (en anglais, sans traduction). Répondez 'yes' si \
la phrase peut être attribuée à une partie quelconque du contexte récupéré, sinon 'no'.
La clé `reason` explique le verdict. Dans la raison, indiquez si possible le ou les numéros des nœuds \
du contexte récupéré (par ex. 1er nœud et 2e nœud du contexte récupéré) auxquels la phrase est \
attribuée. Citez aussi la partie précise du contexte récupéré qui justifie votre verdict, de façon très \
concise, en abrégeant la citation par des points de suspension si possible. Rédigez les raisons en \
français.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'verdicts' associée à une liste d'objets \
JSON, chacun avec deux clés : `verdict` et `reason`.

{
  "verdicts": [
    {
      "reason": "...",
      "verdict": "yes"
    },
    ...
  ]
}

Comme vous produisez un verdict par phrase, le nombre de 'verdicts' DOIT ÊTRE STRICTEMENT ÉGAL au \
nombre de phrases de la réponse attendue.
**

Réponse attendue :
{{ expected_output }}

Contexte récupéré :
{{ context_to_display }}

JSON:
""",
        "generate_reason": """\
À partir de la réponse attendue d'origine, d'une liste de raisons favorables et d'une liste de raisons \
défavorables (déduites directement de la réponse attendue d'origine), et d'un score de rappel \
contextuel (plus il est proche de 1, mieux c'est), résumez une raison CONCISE pour le score.
Une raison favorable explique pourquoi une phrase de la réponse attendue d'origine peut être attribuée \
à un nœud du contexte récupéré.
Une raison défavorable explique pourquoi une phrase de la réponse attendue d'origine ne peut être \
attribuée à rien dans le contexte récupéré.
Dans votre raison, reliez les raisons favorables et défavorables au numéro de la phrase dans la réponse \
attendue, et indiquez le numéro du nœud dans le contexte récupéré pour étayer votre raison finale. La \
première mention de « nœud(s) » doit préciser « nœud(s) du contexte récupéré ».

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français.
Exemple de JSON :
{
  "reason": "Le score est de <score_de_rappel_contextuel> parce que <votre_raison>."
}

NE mentionnez PAS les termes « raisons favorables » et « raisons défavorables » dans votre raison ; ils \
ne sont là que pour vous aider à comprendre l'ensemble.
Si le score vaut 1, restez bref et dites quelque chose de positif sur un ton encourageant (sans en \
faire trop, sinon cela devient agaçant).
**

Score de rappel contextuel :
{{ score }}

Réponse attendue :
{{ expected_output }}

Raisons favorables :
{{ supportive_reasons }}

Raisons défavorables :
{{ unsupportive_reasons }}

JSON:
""",
    },
    "ContextualRelevancyMetric": {
        "generate_verdicts": """\
À partir de la question et du contexte, produisez un objet JSON indiquant si chaque affirmation \
présente dans le contexte est pertinente pour la question fournie. Le JSON contient une liste \
'verdicts', avec 2 champs obligatoires, 'verdict' et 'statement', et 1 champ facultatif, 'reason'.
Vous devez d'abord extraire les affirmations présentes dans le contexte, c'est-à-dire les informations \
de haut niveau qu'il contient, avant de décider d'un verdict et éventuellement d'une raison pour chaque \
affirmation.
La clé 'verdict' doit valoir STRICTEMENT 'yes' ou 'no' (en anglais, sans traduction) et indique si \
l'affirmation est pertinente pour la question.
Ne donnez une 'reason' QUE si le verdict est 'no'. Vous DEVEZ citer les parties non pertinentes de \
l'affirmation pour étayer votre raison. Rédigez les affirmations et les raisons en français.
Si le contexte fourni ne contient aucun contenu ni aucune affirmation : donnez "no" comme "verdict", \
mettez le contexte dans "statement" et "Aucune affirmation trouvée dans le contexte fourni." dans \
"reason".
**
IMPORTANT : répondez uniquement au format JSON.
Exemple de contexte : "Einstein a reçu le prix Nobel pour sa découverte de l'effet photoélectrique. Il \
a reçu le prix Nobel en 1968. Il y avait un chat."
Exemple de question : "Quelles ont été les réalisations d'Einstein ?"

Exemple :
{
  "verdicts": [
    {
      "statement": "Einstein a reçu le prix Nobel pour sa découverte de l'effet photoélectrique en 1968",
      "verdict": "yes"
    },
    {
      "statement": "Il y avait un chat.",
      "reason": "Le contexte contient l'information « Il y avait un chat », qui n'a rien à voir avec \
les réalisations d'Einstein.",
      "verdict": "no"
    }
  ]
}
**

Question :
{{ input }}

Contexte :
{{ context }}

JSON:
""",
        "generate_reason": """\
À partir de la question, des raisons pour lesquelles le contexte récupéré n'est pas pertinent pour la \
question, des affirmations du contexte récupéré qui sont pertinentes, et du score de pertinence \
contextuelle (plus il est proche de 1, mieux c'est), produisez une raison CONCISE pour le score.
Dans votre raison, citez les raisons de non-pertinence et les affirmations pertinentes pour étayer \
votre propos.

**
IMPORTANT : répondez uniquement au format JSON, avec la clé 'reason' contenant la raison, rédigée en \
français.
Exemple de JSON :
{
  "reason": "Le score est de <score_de_pertinence_contextuelle> parce que <votre_raison>."
}

Si le score vaut 1, restez bref et dites quelque chose de positif sur un ton encourageant (sans en \
faire trop, sinon cela devient agaçant).
**


Score de pertinence contextuelle :
{{ score }}

Question :
{{ input }}

Raisons pour lesquelles le contexte récupéré n'est pas pertinent pour la question :
{{ irrelevant_statements }}

Affirmations du contexte récupéré pertinentes pour la question :
{{ relevant_statements }}

JSON:
""",
    },
}
_TEMPLATES = {"fr": _FR}


def _deepeval_metrics() -> Any:
    # DeepEval reads its telemetry opt-out at import time (without it the import creates ./.deepeval/).
    apply_offline_env()
    import deepeval.metrics

    return deepeval.metrics


@functools.cache
def _template_class(metric_cls: type[Any], language: str) -> type[Any] | None:
    """A subclass of the metric's template class whose prompts are the ``language`` renderings."""
    import inspect

    import jinja2

    prompts = _TEMPLATES.get(language, {}).get(metric_cls.__name__)
    if not prompts:
        return None
    base: type[Any] = inspect.signature(metric_cls.__init__).parameters["evaluation_template"].default
    # StrictUndefined as DeepEval's own renderer: a variable the metric stops passing fails loudly.
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)

    def render_method(method: str, text: str) -> staticmethod[..., str]:
        compiled = env.from_string(text)
        english: Callable[..., str] = getattr(base, method)

        def render(**context: Any) -> str:
            if context.get("multimodal"):
                return english(**context)
            return compiled.render(**context)

        return staticmethod(render)

    namespace = {method: render_method(method, text) for method, text in prompts.items()}
    return type(f"{language.capitalize()}{base.__name__}", (base,), namespace)


# ------------------------------------------------------------------------------------------------- judge
@dataclass
class _Transport:
    """What the per-sample judges of one ``compute`` share."""

    http: httpx.AsyncClient
    timeout_s: float
    structured: bool = True  # False once the judge server has rejected response_format


def _parse(text: str, schema: Any) -> Any:
    """The reply as an instance of ``schema``, or ValueError: never DeepEval's lenient parser, which drops
    verdicts outside the vocabulary (and then scores what is left, or 1 for nothing left).

    A reply that is not the bare JSON object (code fences, a sentence around it) is read by DeepEval's own
    ``trimAndLoadJson``; verdict words are normalised the way DeepEval does ("Yes." -> yes, idk ->
    borderline) and must then be in the schema's vocabulary."""
    import pydantic
    from deepeval.metrics.utils import trimAndLoadJson

    try:
        return schema.model_validate_json(text)
    except pydantic.ValidationError:
        pass
    data = trimAndLoadJson(text)  # ValueError when there is no JSON object at all
    try:
        return schema.model_validate(_normalised(data))
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ValueError(
            f"judge output does not fit {schema.__name__} ({problems}): {text[:200]!r}"
        ) from None


def _normalised(data: Any) -> Any:
    """Verdict words as DeepEval normalises them on its loose path; anything else is left for validation."""
    from deepeval.metrics.base_metric import YES_NO_BORDERLINE
    from deepeval.metrics.utils.qag import normalize_qag_verdict

    def fix(item: Any) -> Any:
        if isinstance(item, dict) and "verdict" in item:
            verdict = normalize_qag_verdict(item["verdict"], YES_NO_BORDERLINE)
            return {**item, "verdict": verdict.value} if verdict is not None else item
        return item

    if isinstance(data, dict) and isinstance(data.get("verdicts"), list):
        return {**data, "verdicts": [fix(v) for v in data["verdicts"]]}
    return fix(data)


def _rejects_response_format(exc: Exception) -> bool:
    import openai

    # The gateway reports an upstream 4xx as a 400 whose error code is "http_<status>".
    return isinstance(exc, openai.BadRequestError) and getattr(exc, "code", None) in ("http_400", "http_422")


@functools.cache
def _judge_class() -> type[Any]:
    from deepeval.models import DeepEvalBaseLLM

    class GatewayJudge(DeepEvalBaseLLM):  # type: ignore[no-untyped-call]
        """DeepEval's model interface over one sample's gateway URL, on the compute's shared HTTP pool."""

        def __init__(self, model: str, base_url: str, transport: _Transport) -> None:
            import openai

            self._model = model
            self._base_url = base_url
            self._transport = transport
            self._sync: openai.OpenAI | None = None
            # Not closed per sample: it does not own the shared pool, which the compute closes.
            self._aio = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=_API_KEY,
                http_client=transport.http,
                max_retries=0,  # the gateway retries
                timeout=transport.timeout_s,
            )
            super().__init__(model)

        def load_model(self) -> Any:
            return self._aio

        def get_model_name(self) -> str:
            return self._model

        def _request(self, prompt: str, schema: Any, structured: bool) -> dict[str, Any]:
            body: dict[str, Any] = {
                "model": self._model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
            }
            if schema is not None and structured:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
                }
            return body

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            structured = schema is not None and self._transport.structured
            try:
                resp = await self._aio.chat.completions.create(**self._request(prompt, schema, structured))
            except Exception as exc:
                if not (structured and _rejects_response_format(exc)):
                    raise
                resp = await self._aio.chat.completions.create(**self._request(prompt, schema, False))
                self._transport.structured = False
            text = resp.choices[0].message.content or ""
            return text if schema is None else _parse(text, schema)

        def generate(self, prompt: str, schema: Any = None) -> Any:
            # Only metric.measure(async_mode=False) lands here; the adapter always awaits a_measure.
            import openai

            if self._sync is None:
                self._sync = openai.OpenAI(
                    base_url=self._base_url,
                    api_key=_API_KEY,
                    max_retries=0,
                    timeout=self._transport.timeout_s,
                )
            structured = schema is not None and self._transport.structured
            resp = self._sync.chat.completions.create(**self._request(prompt, schema, structured))
            text = resp.choices[0].message.content or ""
            return text if schema is None else _parse(text, schema)

        def close(self) -> None:
            if self._sync is not None:
                self._sync.close()
                self._sync = None

    return GatewayJudge


# ------------------------------------------------------------------------------------------ the verdicts
def _undefined(cls: str, metric: Any, contexts: int) -> str | None:
    """Whether DeepEval's score rests on one verdict per item it asked the judge about.

    None when it does; the reason the score is undefined when there was nothing to judge (DeepEval scores an
    empty list 1 for faithfulness and answer relevancy, 0 for contextual recall); ValueError when the judge
    gave another number of verdicts than items (DeepEval would score the verdicts it got)."""
    verdicts = list(getattr(metric, "verdicts", None) or [])

    def expect(items: int, what: str) -> None:
        if len(verdicts) != items:
            raise ValueError(f"the judge gave {len(verdicts)} verdict(s) for {items} {what}")

    if cls == "FaithfulnessMetric":
        if not metric.claims:
            return "the judge found no claim in the answer (DeepEval scores 1)"
        expect(len(metric.claims), "claim(s) of the answer")
    elif cls == "AnswerRelevancyMetric":
        if not metric.statements:
            return "the judge found no statement in the answer (DeepEval scores 1)"
        expect(len(metric.statements), "statement(s) of the answer")
    elif cls in ("HallucinationMetric", "ContextualPrecisionMetric"):
        expect(contexts, "context(s)")
    elif cls == "ContextualRecallMetric":
        if not verdicts:
            return "the judge found no sentence in the reference answer (DeepEval scores 0)"
    elif cls == "ContextualRelevancyMetric":
        groups = list(metric.verdicts_list or [])
        if len(groups) != contexts or not all(g.verdicts for g in groups):
            counts = [len(g.verdicts) for g in groups]
            raise ValueError(f"the judge gave no verdict for some of the {contexts} context(s): {counts}")
    return None


# ----------------------------------------------------------------------------------------------- adapter
class Adapter(JudgeAdapter):
    library = "deepeval"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metric = _METRICS[str(self.options["metric"])]
        self.translates_prompts = self.judge_language.split("-")[0].lower() in _TEMPLATES
        self._transport: _Transport | None = None

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        if self.translates_prompts:
            # Scores computed with an older version of the translated prompts are not reused.
            prompts = _TEMPLATES[self.prompt_language][self.metric.cls]
            blob = json.dumps(prompts, sort_keys=True, ensure_ascii=False).encode()
            cfg["prompt_templates"] = hashlib.sha256(blob).hexdigest()[:12]
        return cfg

    async def compute(self, samples: Sequence[Sample]) -> list[SampleScore]:
        import openai

        self._transport = _Transport(
            http=openai.DefaultAsyncHttpxClient(timeout=self.sample_timeout_s),
            timeout_s=self.sample_timeout_s,
        )
        try:
            return await super().compute(samples)
        finally:
            await self._transport.http.aclose()
            self._transport = None

    def _build(self, judge: Any) -> Any:
        metric_cls = getattr(_deepeval_metrics(), self.metric.cls)
        kwargs: dict[str, Any] = {
            "model": judge,
            "include_reason": True,  # one call more, for details["explanation"]
            "async_mode": True,
            "eval_mode": "llm",  # never DeepEval's hosted System One model, whatever DEEPEVAL_EVAL_MODE says
            "verbose_mode": False,
        }
        template = _template_class(metric_cls, self.prompt_language)
        if template is not None:
            kwargs["evaluation_template"] = template
        with warnings.catch_warnings():
            # HallucinationMetric announces its DeepEval 4 score direction; details["scale"] records it.
            warnings.filterwarnings(
                "ignore", message=".*now scores in the same direction", category=DeprecationWarning
            )
            return metric_cls(**kwargs)

    async def score_one(self, sample: Sample) -> SampleScore:
        from deepeval.test_case import LLMTestCase

        if self.metric.needs_answer and not (sample.answer or "").strip():
            return SampleScore(reason="empty answer (DeepEval does not judge an empty actual_output)")
        if self._transport is None:
            raise RuntimeError("score_one outside compute")
        judge = _judge_class()(self.model_name, self.base_url(sample), self._transport)
        metric = self._build(judge)
        contexts = list(sample.contexts)
        test_case = LLMTestCase(
            input=sample.question,
            actual_output=sample.answer,
            expected_output=sample.reference_answer,
            retrieval_context=contexts,
            context=contexts,
        )
        try:
            await metric.a_measure(test_case, _show_indicator=False)
        finally:
            judge.close()
        if metric.score is None:
            raise ValueError(f"DeepEval returned no score: {metric.error or 'no error given'}")
        undefined = _undefined(self.metric.cls, metric, len(contexts))
        if undefined is not None:
            return SampleScore(reason=undefined, details=self._details(metric))
        return SampleScore(value=float(metric.score), details=self._details(metric))

    def _details(self, metric: Any) -> dict[str, Any]:
        details: dict[str, Any] = {
            "scale": self.metric.scale,
            "prompts": self.prompt_language,
            "structured_output": "json_schema" if self._transport and self._transport.structured else "text",
        }
        if metric.reason:
            details["explanation"] = str(metric.reason)[:_EXPLANATION_CHARS]
        verdicts = getattr(metric, "verdicts", None)
        if verdicts is None and hasattr(metric, "verdicts_list"):  # contextual relevancy: a list per context
            verdicts = [v for group in metric.verdicts_list for v in group.verdicts]
        if verdicts is not None:
            details["verdicts"] = [str(v.verdict) for v in verdicts]
        return details


__all__ = ["Adapter"]
