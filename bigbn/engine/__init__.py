"""Running a plan: the task functions, the executors, a run from start to finish."""
