"""Privacy accounting: pure maths, imports nothing from the GP layers.

Seed 000: psi_alpha (Lemma A.3), the RDP bounds of Thm 3.1 / Prop. 2, V_n and Delta_n (App. B),
composition (eq. 3), RDP -> (epsilon, delta) conversion, calibration and certificates.
Seed 002: the functional mechanism's multipliers (Hall, RDP, GDP) and the DPSetConv event.
"""
from .calibrate import CalibrationResult, calibrate_eta, calibrate_L, calibrate_r
from .certificate import PrivacyCertificate, certify
from .conversion import CONVERSIONS, epsilon_from_rdp, log_delta_from_rdp
from .curves import DPGuarantee, RdpCurve, compose
from .functional import (DPSetConvEvent, FunctionalEvent, dpsetconv_mu, dpsetconv_noise_scales,
                         gdp_multiplier, hall_multiplier, rdp_multiplier, setconv_sensitivities)
from .optimize import minimize_over_alpha
from .posterior_sampling import (EpsilonResult, bounds_for, delta_posterior_sampling,
                                 epsilon_posterior_sampling, posterior_sampling_curve)
from .rdp import (alpha_max, psi_alpha, rdp_covariance_term, rdp_mean_term, rdp_posterior_sample,
                  tau_tilde)
from .sensitivity import (PUBLISHED_WARNING, SensitivityBounds, delta_constant, delta_diagonal,
                          delta_exp1d, delta_generic, delta_rkhs, phi_n, sensitivity_bounds, v_bar,
                          v_generic)

__all__ = [
    "DPSetConvEvent", "FunctionalEvent", "dpsetconv_mu", "dpsetconv_noise_scales", "gdp_multiplier",
    "hall_multiplier", "rdp_multiplier", "setconv_sensitivities",
    "CalibrationResult", "PrivacyCertificate", "calibrate_L", "calibrate_eta", "calibrate_r", "certify",
    "rdp_covariance_term",
    "CONVERSIONS", "DPGuarantee", "EpsilonResult", "PUBLISHED_WARNING", "RdpCurve", "SensitivityBounds",
    "alpha_max", "bounds_for", "compose", "delta_constant", "delta_diagonal", "delta_exp1d",
    "delta_generic", "delta_posterior_sampling", "delta_rkhs", "epsilon_from_rdp",
    "epsilon_posterior_sampling", "log_delta_from_rdp", "minimize_over_alpha", "phi_n",
    "posterior_sampling_curve", "psi_alpha", "rdp_mean_term", "rdp_posterior_sample",
    "sensitivity_bounds", "tau_tilde", "v_bar", "v_generic",
]
