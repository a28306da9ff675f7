"""All SQL of deletions: counts of what depends on an entity, and set-based deletes (one statement per table,
children first, rows chosen by subquery), each returning how many rows it removed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import CompoundSelect, Select, delete, func, select

from services.models import (
    Dataset,
    Document,
    IndexState,
    Job,
    JobItem,
    MetricScore,
    MetricScoreHistory,
    Output,
    PairVerdict,
    Passage,
    Preference,
    Question,
    Rater,
    Rating,
    RatingHistory,
    RetrievedChunk,
    Run,
)
from services.repository import Repository


class DeletionRepository(Repository):
    def count(self, stmt: Select[Any] | CompoundSelect[Any]) -> int:
        return int(self.session.scalar(select(func.count()).select_from(stmt.subquery())) or 0)

    def _delete(self, model: Any, condition: Any) -> int:
        result = self.session.execute(
            delete(model).where(condition).execution_options(synchronize_session=False)
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    # What depends on what.
    @staticmethod
    def runs_of(dataset_id: int) -> Select[Any]:
        return select(Run.id).where(Run.dataset_id == dataset_id)

    @staticmethod
    def run(run_id: int) -> Select[Any]:
        return select(Run.id).where(Run.id == run_id)

    def run_ids_of(self, dataset_id: int) -> set[int]:
        return set(self.session.scalars(self.runs_of(dataset_id)))

    @staticmethod
    def outputs_of_runs(runs: Select[Any]) -> Select[Any]:
        return select(Output.id).where(Output.run_id.in_(runs.scalar_subquery()))

    @staticmethod
    def outputs_of_run(run_id: int) -> Select[Any]:
        return select(Output.id).where(Output.run_id == run_id)

    @staticmethod
    def outputs_in(ids: Sequence[int]) -> Select[Any]:
        return select(Output.id).where(Output.id.in_(list(ids)))

    @staticmethod
    def questions_of(dataset_id: int) -> Select[Any]:
        return select(Question.id).where(Question.dataset_id == dataset_id)

    def ratings_on(self, outputs: Select[Any]) -> Select[Any]:
        return select(Rating.id).where(Rating.output_id.in_(outputs.scalar_subquery()))

    def scores_on(self, outputs: Select[Any]) -> Select[Any]:
        return select(MetricScore.id).where(MetricScore.output_id.in_(outputs.scalar_subquery()))

    def retired_on(self, outputs: Select[Any]) -> CompoundSelect[Any]:
        """Ratings and scores of earlier answers of these outputs (the history tables), as one count."""
        sub = outputs.scalar_subquery()
        return (
            select(RatingHistory.id)
            .where(RatingHistory.output_id.in_(sub))
            .union_all(select(MetricScoreHistory.id).where(MetricScoreHistory.output_id.in_(sub)))
        )

    def jobs(self) -> Sequence[Job]:
        return self.session.scalars(select(Job).order_by(Job.id)).all()

    def rater(self, name: str) -> Rater | None:
        return self.session.scalar(select(Rater).where(Rater.name == name))

    def job_keys(self, job_id: int) -> list[str]:
        return list(self.session.scalars(select(JobItem.key).where(JobItem.job_id == job_id)))

    def generated_outputs(self, run_id: int, question_ids: Sequence[int]) -> list[int]:
        """Outputs of a run for these questions whose answer the service generated (not imported since)."""
        stmt = select(Output.id, Output.generator).where(
            Output.run_id == run_id, Output.question_id.in_(list(question_ids))
        )
        return [i for i, gen in self.session.execute(stmt) if (gen or {}).get("kind") != "external"]

    def ratings_of_rater(self, run_id: int, rater_id: int, history: bool = False) -> Select[Any]:
        model: Any = RatingHistory if history else Rating
        return select(model.id).where(
            model.rater_id == rater_id, model.output_id.in_(self.outputs_of_run(run_id).scalar_subquery())
        )

    def scores_of_metric(self, run_id: int, metric: str, history: bool = False) -> Select[Any]:
        model: Any = MetricScoreHistory if history else MetricScore
        return select(model.id).where(
            model.metric == metric, model.output_id.in_(self.outputs_of_run(run_id).scalar_subquery())
        )

    def verdicts_of_job(self, job_id: int) -> Select[Any]:
        return select(PairVerdict.id).where(PairVerdict.job_id == job_id)

    def scores_of_job(self, job_id: int, history: bool = False) -> Select[Any]:
        model: Any = MetricScoreHistory if history else MetricScore
        return select(model.id).where(model.job_id == job_id)

    # Deletes.
    def delete_ids(self, model: Any, ids: Select[Any]) -> int:
        return self._delete(model, model.id.in_(ids.scalar_subquery()))

    def delete_outputs(self, outputs: Select[Any]) -> dict[str, int]:
        """Outputs with everything that hangs from them: ratings and metric scores (and those of earlier
        answers, in the history tables), retrieved chunks."""
        sub = outputs.scalar_subquery()
        out = {
            "preference": self._delete(
                Preference, Preference.output_a_id.in_(sub) | Preference.output_b_id.in_(sub)
            ),
            "pair_verdict": self._delete(
                PairVerdict, PairVerdict.output_a_id.in_(sub) | PairVerdict.output_b_id.in_(sub)
            ),
            "rating": self._delete(Rating, Rating.output_id.in_(sub)),
            "rating_history": self._delete(RatingHistory, RatingHistory.output_id.in_(sub)),
            "metric_score": self._delete(MetricScore, MetricScore.output_id.in_(sub)),
            "metric_score_history": self._delete(MetricScoreHistory, MetricScoreHistory.output_id.in_(sub)),
            "retrieved_chunk": self._delete(RetrievedChunk, RetrievedChunk.output_id.in_(sub)),
        }
        out["output"] = self._delete(Output, Output.id.in_(sub))
        return out

    def delete_jobs(self, job_ids: Sequence[int]) -> dict[str, int]:
        ids = list(job_ids)
        if not ids:
            return {"job_item": 0, "job": 0}
        return {
            "job_item": self._delete(JobItem, JobItem.job_id.in_(ids)),
            "job": self._delete(Job, Job.id.in_(ids)),
        }

    def delete_run_rows(self, runs: Select[Any]) -> int:
        return self._delete(Run, Run.id.in_(runs.scalar_subquery()))

    def delete_dataset_rows(self, dataset_id: int) -> dict[str, int]:
        questions = self.questions_of(dataset_id).scalar_subquery()
        return {
            "passage": self._delete(Passage, Passage.question_id.in_(questions)),
            "question": self._delete(Question, Question.dataset_id == dataset_id),
            "document": self._delete(Document, Document.dataset_id == dataset_id),
            "index_state": self._delete(IndexState, IndexState.dataset_id == dataset_id),
            "dataset": self._delete(Dataset, Dataset.id == dataset_id),
        }

    def counts_of_dataset(self, dataset_id: int) -> dict[str, int]:
        return {
            "documents": self.count(select(Document.id).where(Document.dataset_id == dataset_id)),
            "questions": self.count(self.questions_of(dataset_id)),
            "runs": self.count(self.runs_of(dataset_id)),
        }
