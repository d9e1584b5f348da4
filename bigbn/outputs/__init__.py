"""What a finished run gives: results, parent sets, samples, causal effects, figures."""
