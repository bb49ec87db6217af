"""Trials of fresh agents that have only the installed skill: the problem list, each trial's folder, its prompt.

A trial gives a fresh subagent one KernelBench problem, the skill installed the way a user installs it
(`kernel-opt install --project`), a request in the slash command's words, and a GPU host; it works unaided.
The comparison trial gives the same kind of agent the same problem and iteration budget without the skill.
Afterwards `collect` copies what the agent left (its run folder without large binaries, its final report,
its log) to demo/agent_trials/<trial>/. A comparison's "fast" kernel is then judged by this project's own
`correctness_check.py` and `benchmark.py` on the GPU host, against the unchanged problem file
(tools/trial_judge.py).

  draw KERNELBENCH [--seed S] [--count N] [--cuda K] [--comparisons C]
        the problem list, drawn before any trial runs: N problems from levels 1 and 2 (random.Random(S)),
        the first K of the draw in CUDA and the rest in Triton, the first C also without the skill, and
        four reserves in draw order for a problem that cannot run; writes demo/agent_trials/plan.json
  prepare TRIAL KERNELBENCH TRIALS_ROOT [--without-skill] [--cpu-only]
        TRIALS_ROOT/<trial>/ holding the problem file, the installed skill (unless --without-skill),
        REQUEST.md (the slash command's words) and PROMPT.md (everything the subagent is given;
        --cpu-only: no GPU host within reach, as for an agent in a CPU sandbox)
  pretrial KERNELBENCH [--seed S]
        the next CPU-only pre-trial's problem: the first, in random.Random(S).sample over the problems the plan
        neither draws nor reserves (KernelBench's numbering), that no demo/agent_trials/cpu_only_* folder holds
  collect TRIAL_DIR DEST
        the trial's folder without builds, ncu reports, compiled objects and files over 2 MB

Usage (from the repository root):
  python3 tools/agent_trials.py draw /path/to/KernelBench --seed 2911 --count 8 --cuda 2 --comparisons 3
  python3 tools/agent_trials.py prepare L1_23_Softmax /path/to/KernelBench .trials
  python3 tools/agent_trials.py collect .trials/L1_23_Softmax demo/agent_trials/L1_23_Softmax

Exit codes: 0 done; 2 bad arguments, a missing problem, or a trial not in the plan.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "demo" / "agent_trials" / "plan.json"
ITERATIONS = 3
RESERVES = 4
LARGEST_KEPT_BYTES = 2 * 1024 * 1024
LEFT_BEHIND_DIRECTORIES = {"build", "__pycache__", "compile_check", ".claude", ".venv", ".git"}
LEFT_BEHIND_SUFFIXES = {".ncu-rep", ".so", ".o", ".cubin", ".ptx", ".fatbin", ".pt", ".whl", ".tgz", ".pyc"}
DEVICE_MINUTES = 8
PRETRIAL_SEED = 20261129  # the CPU-only pre-trials' order (pretrial_order)


def problems(kernelbench: Path) -> list[tuple[int, Path]]:
    """(level, file) for every level-1 and level-2 problem, in KernelBench's numbering."""
    found = []
    for level in (1, 2):
        folder = next((f for f in (kernelbench / "KernelBench" / f"level{level}", kernelbench / f"level{level}")
                       if f.is_dir()), None)
        if folder is None:
            raise FileNotFoundError(f"no level{level}/ folder under {kernelbench} (nor KernelBench/level{level}/)")
        found += sorted(((level, path) for path in folder.glob("*.py")), key=lambda item: _number(item[1].stem))
    return found


def _number(stem: str) -> int:
    head = stem.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def trial_name(level: int, path: Path) -> str:
    return f"L{level}_{path.stem}"


def draw(kernelbench: Path, seed: int, count: int, cuda: int, comparisons: int, commit: str | None = None) -> dict:
    """The plan: drawn trials (backend, with or without a comparison) and the reserves, all from one seed."""
    pool = problems(kernelbench)
    picked = random.Random(seed).sample(pool, count + RESERVES)
    trials = [{"trial": trial_name(level, path), "level": level, "file": path.name,
               "backend": "cuda" if index < cuda else "triton", "comparison_without_skill": index < comparisons}
              for index, (level, path) in enumerate(picked[:count])]
    reserves = [trial_name(level, path) for level, path in picked[count:]]
    return {"seed": seed, "drawn_from": f"{len(pool)} problems of KernelBench levels 1 and 2",
            "kernelbench_commit": commit,
            "iterations": ITERATIONS, "trials": trials, "reserves": reserves}


PRETRIAL_PREFIX = "cpu_only_"


def pretrial_order(kernelbench: Path, plan: dict, seed: int) -> list[str]:
    """The order CPU-only pre-trials take problems in: random.Random(seed).sample over every level-1 and level-2
    problem that the plan neither draws nor reserves, listed in KernelBench's numbering."""
    taken = {entry["trial"] for entry in plan["trials"]} | set(plan["reserves"])
    pool = [trial_name(level, path) for level, path in problems(kernelbench) if trial_name(level, path) not in taken]
    return random.Random(seed).sample(pool, len(pool))


def next_pretrial(order: list[str], trials_dir: Path) -> tuple[int, str]:
    """(place in the order, counted from 1, and name) of the first problem no pre-trial under trials_dir has run."""
    done = {path.name.removeprefix(PRETRIAL_PREFIX) for path in trials_dir.glob(f"{PRETRIAL_PREFIX}*")}
    for place, name in enumerate(order, start=1):
        if name not in done:
            return place, name
    raise ValueError("every problem in the order has had a pre-trial")


def plan_entry(plan: dict, trial: str) -> dict:
    for entry in plan["trials"]:
        if entry["trial"] == trial:
            return entry
    for index, name in enumerate(plan["reserves"]):
        if name == trial:
            level, _, stem = name.partition("_")
            return {"trial": name, "level": int(level[1:]), "file": f"{stem}.py", "backend": "triton",
                    "comparison_without_skill": False, "reserve": index}
    raise KeyError(trial)


def request(entry: dict) -> str:
    """What the user types: the slash command's words (commands/kernel-opt-skill.md: kernel, iterations, OUT)."""
    language = "a CUDA kernel" if entry["backend"] == "cuda" else "a Triton kernel"
    return (f"/kernel-opt-skill optimize the KernelBench problem {entry['file']} (level {entry['level']}) with "
            f"{language} of your own as its ModelNew, run {ITERATIONS} iterations, output to out/")


TRAVEL_LIMIT_MIB = 64  # what a `run` call may send: tracked and untracked-not-ignored files, and the carried paths


def tracked_mib(repo: Path = REPO) -> float:
    """The repository's tracked files in MiB: they travel with every `run` call, before any carried path."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    paths = (repo / name.decode() for name in listed.split(b"\0") if name)
    return sum(path.stat().st_size for path in paths if path.is_file()) / 2**20


def machines(name: str, gpu: bool, repository_mib: float | None = None) -> str:
    """The prompt's account of this machine and the GPU host (or of its absence, for a CPU-only trial).

    `repository_mib`: what the checkout already sends with every call, so the prompt can say what room
    the agent's folder has (a trial's 4 MB of compiled .so files once took a call over the limit).
    """
    here = ("This machine has no GPU (Python 3.11, torch CPU build, triton; `TRITON_INTERPRET=1` runs Triton on "
            "the CPU).")
    if not gpu:
        return (f"{here} It has 2 CPU cores, shared with other work, so keep runs small. The user's GPU host is down "
                "today and no other GPU is within reach: do what can be done here and leave the run so that it can "
                "go on on a GPU later. Do not use any remote-run or device tool you may have: the user's GPU host "
                "is down.")
    repository_mib = tracked_mib() if repository_mib is None else repository_mib
    room = (f"What travels is limited to {TRAVEL_LIMIT_MIB} MiB, and the repository checkout\n"
            f"already takes {repository_mib:.0f} MiB of it: your folder and the wheels have about "
            f"{max(TRAVEL_LIMIT_MIB - repository_mib, 0):.0f} MiB, so keep builds (compiled\n"
            "`.so` files, build folders) and archives out of what you carry.")
    return f"""{here}
The user's GPU host (one NVIDIA H200, nvcc 13.0, ncu 2025.3.1, torch 2.11, triton 3.6, no network) is reached
with the `run` tool. Each `run` call copies the repository checkout `/work/main` to a fresh folder there, plus the
ignored paths you name in `carry`: name `.trials/{name}` so your folder travels, and start the command with
`cd .trials/{name} &&`. Only files you write under `$OUT` on the host come back (at most 8 files, two folders
deep, 16 MiB a file): to bring a folder back, `tar czf $OUT/back.tgz out` there and unpack the file the reply
names here. {room}
Nothing stays on the host between calls. nsight-python is not installed there; its wheels are in `/work/main/.whl`:
carry `.whl` and run `python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export
PYTHONPATH=/tmp/site` first if a step needs it. The host's time is scarce: use at most {DEVICE_MINUTES} minutes of it
in all, in few calls (each call first waits a minute or more for the host to start; a call may take at most 600 s)."""


def prompt(entry: dict, folder: Path, with_skill: bool, gpu: bool = True) -> str:
    """Everything the subagent is given: the request, its folder, the GPU host, and what to leave behind."""
    skill = (f"The skill is installed in this project at `{folder}/.claude/skills/kernel-opt-skill/` (the slash "
             f"command at `{folder}/.claude/commands/kernel-opt-skill.md`). Read and use only the installed skill; "
             "nothing else about it exists for you.\n" if with_skill else
             "You have no optimization skill or tooling: use your own knowledge and PyTorch, Triton, CUDA.\n")
    task = request(entry) if with_skill else (
        f"Optimize the KernelBench problem {entry['file']} (level {entry['level']}): write a faster ModelNew using "
        f"{'a CUDA kernel' if entry['backend'] == 'cuda' else 'a Triton kernel'} of your own. You have a budget of "
        f"{ITERATIONS} iterations (versions after your first working one). Put every version and a final report "
        "(best version, its speedup over PyTorch eager and torch.compile, how you checked it is correct) in out/.")
    return f"""You are a coding agent working for a user in the project folder `{folder}`. Work only inside that
folder. Do not read anything else on this machine (not the repository around it, not other folders under
`.trials/`): the user's project is this folder alone.

{skill}
The user's request:

> {task}

The problem file is `{folder}/{entry['file']}`.

## The machines
{machines(folder.name, gpu)}

## What to leave behind
Work unaided; the user is not available for questions. As you go, keep `{folder}/TRIAL_LOG.md`: every command
you ran (where: here or on the GPU host) with its exit code and wall time, and every place where you had to guess,
hit an error, found the instructions unclear or wrong, or chose not to follow their advice (quote the words).
When you finish, reply with: the final report's path, the best version and its speedup over PyTorch eager and
torch.compile, how many iterations you used and why you stopped, and the friction points from your log.
"""


def prepare(entry: dict, kernelbench: Path, root: Path, with_skill: bool, gpu: bool = True) -> Path:
    level_folder = next(path.parent for level, path in problems(kernelbench)
                        if level == entry["level"] and path.name == entry["file"])
    folder = root.resolve() / (entry["trial"] if with_skill else f"{entry['trial']}-without-skill")
    folder.mkdir(parents=True, exist_ok=False)
    shutil.copyfile(level_folder / entry["file"], folder / entry["file"])
    if with_skill:
        subprocess.run([sys.executable, str(REPO / "skills" / "kernel-opt-skill" / "scripts" / "install.py"),
                        "--project", str(folder)], check=True, capture_output=True, text=True)
    (folder / "REQUEST.md").write_text(request(entry) + "\n")
    (folder / "PROMPT.md").write_text(prompt(entry, folder, with_skill, gpu))
    return folder


def collect(trial: Path, dest: Path) -> list[str]:
    """Copy the trial's folder to `dest`, leaving builds, binaries and files over 2 MB behind; the paths left."""
    left: list[str] = []
    # A virtual environment the agent made, whatever it named it: the folder holding pyvenv.cfg.
    environments = {marker.parent.relative_to(trial) for marker in trial.rglob("pyvenv.cfg")}
    for source in sorted(trial.rglob("*")):
        relative = source.relative_to(trial)
        if not source.is_file():
            continue
        inside_environment = any(relative.is_relative_to(environment) for environment in environments)
        if set(relative.parts[:-1]) & LEFT_BEHIND_DIRECTORIES or source.suffix in LEFT_BEHIND_SUFFIXES \
                or source.stat().st_size > LARGEST_KEPT_BYTES or inside_environment:
            left.append(str(relative))
            continue
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    draw_parser = commands.add_parser("draw", help="the problem list, written to demo/agent_trials/plan.json")
    draw_parser.add_argument("kernelbench", type=Path)
    draw_parser.add_argument("--seed", type=int, required=True)
    draw_parser.add_argument("--count", type=int, default=8)
    draw_parser.add_argument("--cuda", type=int, default=2)
    draw_parser.add_argument("--comparisons", type=int, default=3)
    draw_parser.add_argument("--plan", type=Path, default=PLAN)
    draw_parser.add_argument("--kernelbench-commit", help="the KernelBench commit the files come from, for the plan")
    prepare_parser = commands.add_parser("prepare", help="one trial's folder, installed skill and prompt")
    prepare_parser.add_argument("trial")
    prepare_parser.add_argument("kernelbench", type=Path)
    prepare_parser.add_argument("root", type=Path)
    prepare_parser.add_argument("--without-skill", action="store_true")
    prepare_parser.add_argument("--cpu-only", action="store_true", help="a trial with no GPU host within reach")
    prepare_parser.add_argument("--plan", type=Path, default=PLAN)
    pretrial_parser = commands.add_parser("pretrial", help="the next CPU-only pre-trial's problem, outside the plan")
    pretrial_parser.add_argument("kernelbench", type=Path)
    pretrial_parser.add_argument("--seed", type=int, default=PRETRIAL_SEED)
    pretrial_parser.add_argument("--plan", type=Path, default=PLAN)
    collect_parser = commands.add_parser("collect", help="a finished trial's folder, without large binaries")
    collect_parser.add_argument("trial_dir", type=Path)
    collect_parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "draw":
            if not 0 <= args.cuda <= args.count or not 0 <= args.comparisons <= args.count:
                raise ValueError("--cuda and --comparisons must lie between 0 and --count")
            plan = draw(args.kernelbench, args.seed, args.count, args.cuda, args.comparisons,
                        args.kernelbench_commit)
            args.plan.parent.mkdir(parents=True, exist_ok=True)
            args.plan.write_text(json.dumps(plan, indent=2) + "\n")
            for entry in plan["trials"]:
                print(f"{entry['trial']}\t{entry['backend']}\t"
                      f"{'with and without the skill' if entry['comparison_without_skill'] else 'with the skill'}")
            print(f"reserves: {', '.join(plan['reserves'])}")
        elif args.command == "pretrial":
            place, name = next_pretrial(pretrial_order(args.kernelbench, json.loads(args.plan.read_text()), args.seed),
                                        PLAN.parent)
            print(f"{name}\t(place {place} of random.Random({args.seed}).sample over the problems the plan neither "
                  "draws nor reserves)")
        elif args.command == "prepare":
            entry = plan_entry(json.loads(args.plan.read_text()), args.trial)
            print(prepare(entry, args.kernelbench, args.root, not args.without_skill, gpu=not args.cpu_only))
        else:
            left = collect(args.trial_dir, args.dest)
            tops = sorted({Path(path).parts[0] for path in left})
            print(f"copied to {args.dest}; left behind: {len(left)} file(s)" + (f" under {', '.join(tops)}" if tops
                                                                               else ""))
    except (FileNotFoundError, FileExistsError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
