"""SFT rows per role from verified trajectories, through the family contract.

A writer trajectory that verified teaches both roles: the writer row (spec → body) and
the annotator row (body → annotated body). Annotator trajectories teach the annotator.
Trajectories carry the prompt pieces, so no task lookup is needed.

Rows are re-screened from the trajectory's own texts, whatever its `verified` flag says:
the writer's body and the annotation must pass the anti-cheat screen, and the annotation
must keep the code it was given (`same_code`). A writer body the annotator replaced
teaches nothing: no writer row and no annotator row. The writer row teaches the writer's
code without its hints (`remove_hints`): the cascade proved that code with the
annotator's hints, not with whatever hints the writer wrote, so those are never taught.

Prompts are `prompts.role_prompt` (configs/dafny_prompts.yaml), the ones GRPO and
evaluation ask with; the target is `prompts.completion`: the fenced answer ended by the
stop sequence where evaluation stops the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.core.family import SftRow
from verilearn_assets.core.records import Record
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.lang.syntax import lemma_names, remove_hints, same_code
from verilearn_assets.dafny.records import DafnyTrajectory
from verilearn_assets.dafny.verify.anticheat import screen


def _lemmas(trajectory: DafnyTrajectory) -> frozenset[str]:
    return lemma_names(trajectory.prefix + trajectory.spec + "{ }" + trajectory.suffix)


def teachable(trajectory: DafnyTrajectory) -> bool:
    """Verified, screened clean, and the annotator kept the body it was shown."""
    if not trajectory.verified:
        return False
    shown = trajectory.body if trajectory.writer_output is None else trajectory.writer_output
    answers = [trajectory.annotator_output]
    if trajectory.role == "writer":
        if trajectory.writer_output is None:
            return False
        answers.append(trajectory.writer_output)
    if any(screen(a, "body") for a in answers):
        return False
    return same_code(shown, trajectory.annotator_output, _lemmas(trajectory))


def rows_for(
    trajectory: DafnyTrajectory, config: prompts.PromptConfig | None = None
) -> list[SftRow]:
    """The trajectory's rows per role (none unless `teachable`), in `config`'s prompts
    (default: configs/dafny_prompts.yaml)."""
    if not teachable(trajectory):
        return []
    pairs: list[tuple[str, str | None, str]] = []
    if trajectory.role == "writer" and trajectory.writer_output is not None:
        code = remove_hints(trajectory.writer_output, _lemmas(trajectory))
        pairs.append(("writer", None, code))
        pairs.append(("annotator", code, trajectory.annotator_output))
    else:
        pairs.append(("annotator", trajectory.body, trajectory.annotator_output))
    cfg = config or prompts.load_prompt_config()
    rows = []
    for role, body, answer in pairs:
        msgs = prompts.role_prompt(trajectory, role, body, cfg)
        msgs.append({"role": "assistant", "content": prompts.completion(answer, cfg)})
        rows.append(
            SftRow(
                id=SftRow.make_id("dafny", trajectory.id, role),
                family="dafny",
                task_id=trajectory.task_id,
                rollout_id=trajectory.id,
                source=trajectory.source,
                split=trajectory.split,
                role=role,
                teacher=trajectory.teacher,
                messages=msgs,
                n_messages=len(msgs),
                template=trajectory.mutation or trajectory.name,
            )
        )
    return rows


def sft_rows(rollouts: Sequence[Record]) -> list[SftRow]:
    cfg = prompts.load_prompt_config()
    out: list[SftRow] = []
    for r in rollouts:
        if not isinstance(r, DafnyTrajectory):
            raise TypeError(f"dafny sft_rows: {type(r).__name__} is not a DafnyTrajectory")
        out.extend(rows_for(r, cfg))
    return out
