"""The evaluation's last step: experience recommendations for the version the next iteration starts from."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.core.errors import ExitCode
from kernel_opt.core.render import render
from kernel_opt.experience.ranking import RecommendRequest, recommend_from_log
from kernel_opt.loop.evaluation import Evaluation, StepOutcome
from kernel_opt.loop.versions import best_so_far, list_versions
from kernel_opt.profile.advice import guide_backend
from kernel_opt.profile.records import NcuSummary, read_profile

EXPERIENCE_PROG = "experience_log.py"
RECOMMENDATIONS_SHOWN = 5


def recommend_step(evaluation: Evaluation) -> None:
    """Experience recommendations for the version the next iteration starts from (the best so far)."""
    if evaluation.stopped:
        evaluation.skip("recommend", "an earlier check failed")
        return
    best = best_so_far(list_versions(evaluation.out, evaluation.run)) or evaluation.version
    chip = best.gpu_name or evaluation.version.gpu_name
    # the guide the best version's kernels follow: a Triton ModelNew's records are Triton's
    backend = guide_backend(evaluation.run.backend, Path(best.solution))
    profile = read_profile(Path(best.directory)) or NcuSummary()
    # the family the profile read from the reference's operations: a run named "v0" or "88_MinGPTNewGelu" is still
    # an elementwise problem, and a GEMM's lessons are not its lessons
    family = profile.traits.known_family if profile.traits is not None else None
    request = RecommendRequest(kernel=evaluation.run.kernel_name, backend=backend, chip=chip,
                               bottleneck=best.bottleneck, limit=RECOMMENDATIONS_SHOWN, family=family)

    def recommend() -> StepOutcome:
        result, skipped = recommend_from_log(request)
        text = "".join(f"warning: skipped {line}\n" for line in skipped)
        return StepOutcome(result, int(ExitCode.OK), text + render("experience_recommend.md.j2", result=result))

    label = best.bottleneck or "bottleneck not profiled yet"

    def summarize(result) -> str:
        names = ", ".join(item.strategy + (f" ({item.chip_requirement})" if item.chip_requirement else "")
                          for item in result.recommendations)
        return f"for {best.name} ({label}): {names or 'no matching records in the experience log'}"

    step, result = evaluation.step("recommend", [EXPERIENCE_PROG, *request.argv()], recommend, summarize, [])
    answer = result.to_dict() if result is not None else {}
    evaluation.recommendations = {
        "for_version": best.name,
        "bottleneck": best.bottleneck,
        "chip": chip,
        "strategies": [
            {k: item.get(k) for k in ("strategy", "successes", "failures", "neutral", "median_speedup", "warnings")}
            for item in answer.get("recommendations", [])
        ],
        "avoid": [item.get("optimization") or item.get("strategy") for item in answer.get("avoid", [])],
        "read_next": [item.link for item in profile.read_next[:RECOMMENDATIONS_SHOWN] if item.link],
    }
    if result is None:
        step.summary = f"for {best.name} ({label}): {step.summary}"
