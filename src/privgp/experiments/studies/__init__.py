"""privgp's own studies, beyond the papers: the utility study, the mechanism comparison,
private Thompson sampling, the audit of iterative samplers."""
