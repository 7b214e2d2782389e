"""Leave-one-out distinguishability (seed 003): LOOD of GP models, LOOD membership inference,
optimal queries, and the per-record LOOD of a planned release."""
