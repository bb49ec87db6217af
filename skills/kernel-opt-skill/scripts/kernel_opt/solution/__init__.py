"""What a kernel under test is: the ref.py contract, its inputs, and a loaded solution to call."""
