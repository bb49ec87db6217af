"""The optimization run: versions, hypotheses, evaluation records and the final report."""
