"""Integrity checks: what the correctness check does beyond comparing outputs, one module per check.

A comparison with the reference cannot see every way a kernel can be wrong or cheat: an element
it never writes may hold the right value by chance, it may write into its inputs, compute on
the host, race on another stream, replace the harness's timers, or compute in a lower precision
than the reference within every tolerance. Each of those is caught by one check here.

The contract (protocol.py: `IntegrityCheck`)
--------------------------------------------
A check is a subclass of `IntegrityCheck` in a module of its own. It sets:

- `name`: its name in the registry and in the IntegrityEvent that carries its result;
- `when`: `When.AROUND_CASE` (hooks around every case's call of the solution) or
  `When.AFTER_CASES` (one run once every case has been compared);
- `record_key`: where its result lives on disk. An after-cases check's result record is written
  under this key at the top level of correctness.json (after "build"); an around-case check's
  finding is written under this key in each case. None: it keeps no record (its outcome is an
  error that ends the run, as tampering's, or shows in the comparison itself, as poisoning's);
- `title`: the heading of its section in correctness.md (None: no section).

In the child process (check/child.py), an instance is made per run for each check whose
`applies(RunFacts)` says so (around-case checks are asked before the first case, after-cases
checks after the last: facts.all_passed is then final). The hooks, all optional:

- `before_load(request)`: before the solution is loaded;
- `solution_ran(after, who)`: after any of the solution's code ran (loading, every call of the
  cases and of other checks); raising here ends the run with that error;
- `before_call(call)` / `after_call(call)`: around a case's call (`CaseCall`: its values, outputs,
  and after the call its comparisons); after_call returns the case's finding (JSON), or None;
- `run(session)`: an after-cases check's work (`CheckSession`: fresh instances, the reference's
  expectation, the comparison, the solution), returning a record with `to_dict()`; a call of the
  solution in it is followed by `session.solution_ran(...)`;
- `draws_again(facts, session, dims)` (class method): the inputs of a case at `dims` that an
  after-cases check will draw again where it may run; a constant value in them is no blind spot,
  so the cases warn of none there.

In the parent, from the record (class methods, no torch):

- `case_problems(finding)`: (subject, text) per problem an around-case finding shows; any fails
  the case, and each becomes a sentence of "Why it failed";
- `read(payload)`: an after-cases result record from its section (`from_dict`);
- `failures(result, report)` and `passed(result, report)`: how the result enters the verdict (the
  record passes only if every case passed and every check's result passes);
- `headline(result, report, total, mode)`: the console's first line when every case matched but
  this check failed the run; `pass_lines(result, report)`: lines under a PASS;
- `section(result, report)`: its Markdown under its title, which correctness.md.j2 renders in
  one loop over every check's section (verdict.report_sections).

The registry (registry.py) lists the built-in checks in order, one line each; `register(Check)`
adds another, which the child registers too (the request names it as "module:Class"). verdict.py
is the only code that turns results into the verdict, the failures and the sections.

Adding a check: its module here and one line in registry.BUILT_IN; a known-wrong solution that
only it catches, under reference/<problem>/wrong/ or tests/fixtures/, with its row in
reference/<problem>/expected.yaml (tests/integration/test_fixture_corpus.py runs it on the CPU) and in
tools/integrity_corpus.sh (the GPU corpus).

Kept apart: the benchmark's check of its timed outputs (measure/benchmark_child.py, the cause in
measure/timed_outputs.py) runs inside the timing, on the input pool's buffer sets, in the
benchmark's worker, and decides the benchmark's verdict (incorrect), not this record's.
"""
