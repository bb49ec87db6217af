"""The evaluation suite: problems paired with solutions, each checked and timed, summarised (correct rate, fast_p)."""
