"""The models layer: public domains, normalised kernels, the NNGP kernel, exact GP posteriors and
exact samplers (what the mechanisms release from). Lowest first: domain, kernels, nngp < gp < sampling."""
