python $S/env_check.py --output-dir out; stamp env_check $?
python $S/workspace.py evaluate out v0; stamp evaluate_v0 $?
python $S/workspace.py next out; stamp next_v1 $?
cp src/v1/v1.py out/v1/v1.py && cp src/v1/hypothesis.txt out/v1/hypothesis.txt
python $S/workspace.py evaluate out v1; stamp evaluate_v1 $?
python $S/workspace.py status out; stamp status $?
