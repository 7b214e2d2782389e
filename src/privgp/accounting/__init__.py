"""Privacy accounting: pure maths; imports nothing above ``errors``/``validation``.

* events (:mod:`.events`, :mod:`.posterior_sampling`): what each mechanism's analysis needs, with their
  stability contract, self-registration and typed neighbouring relation (:class:`Neighbouring`);
* the accountant (:mod:`.accountant`): ``epsilon(event, delta)``, ``delta(event, epsilon)``, ``rdp``;
  its versioned composition rules (``COMPOSITIONS``, ``composition_rule``);
* :func:`calibrate` (one calibrator; :func:`calibrate_gaussian` and :func:`feasible_side` for closed
  forms), :func:`certify` / :class:`PrivacyCertificate`;
* private selection (:mod:`.selection`: Liu & Talwar's random stopping, seed 001 eq. 20) and the
  zCDP conversion of seed 001's eq. 19 (:mod:`.zcdp`);
* formulas: seed 000's RDP bounds (:mod:`.rdp`, :mod:`.sensitivity`), the Gaussian/GDP profile
  (:mod:`.gaussian`), conversions (:mod:`.conversion`), Gaussian divergences (:mod:`.divergences`);
* seed 004: divergences between a Gaussian and a Gaussian mixture (:mod:`.mixtures`), the posterior RDP
  of 1-D Bayesian linear regression (:mod:`.linear_regression`), and the certificate of the
  sample-then-optimise iterate (:mod:`.sampler_bounds`).
* seed 002 (:mod:`.functional`): the functional mechanism's multipliers (Hall, RDP, GDP), its event
  and the DPSetConv event.

Events are built by mechanisms (:mod:`privgp.mechanisms`), which know kernels and domains.
"""
from .accountant import (
    COMPOSITIONS,
    DEFAULT_COMPOSITION,
    LEGACY_COMPOSITION,
    Guarantee,
    composition_rule,
    delta,
    epsilon,
    rdp,
)
from .calibrate import CalibrationResult, calibrate, calibrate_gaussian, feasible_side
from .certificate import PrivacyCertificate, certify
from .conversion import CONVERSIONS, epsilon_from_rdp, log_delta_from_rdp
from .events import (
    EVENT_TYPES,
    ApproxDpEvent,
    ComposedEvent,
    EventBatch,
    GaussianEvent,
    GdpEvent,
    Neighbouring,
    PrivacyEvent,
    PureDpEvent,
    ZcdpEvent,
    event_from_dict,
    event_from_json,
    register_event,
)
from .functional_noise import (
    DPSetConvEvent,
    FunctionalEvent,
    dpsetconv_mu,
    dpsetconv_noise_scales,
    gdp_multiplier,
    hall_multiplier,
    rdp_multiplier,
    setconv_sensitivities,
)
from .gaussian import compose_mu, gaussian_noise_std, gdp_delta, gdp_epsilon, gdp_mu
from .linear_regression import LinearRegressionPosteriorEvent
from .order_search import minimize_over_alpha
from .posterior_sampling import PosteriorSampleEvent
from .rdp import alpha_max, psi_alpha, rdp_covariance_term, rdp_mean_term, rdp_posterior_sample, tau_tilde
from .sampler_bounds import SampleThenOptimiseEvent
from .selection import SelectionBudget, SelectionEvent, liu_talwar_budget
from .sensitivity import (
    PUBLISHED_WARNING,
    SensitivityBounds,
    delta_constant,
    delta_diagonal,
    delta_exp1d,
    delta_generic,
    delta_rkhs,
    phi_n,
    sensitivity_bounds,
    v_bar,
    v_generic,
)
from .tabulated import TabulatedRdpEvent
from .zcdp import zcdp_epsilon, zcdp_rho_for

__all__ = [
    "DPSetConvEvent", "FunctionalEvent", "dpsetconv_mu", "dpsetconv_noise_scales", "gdp_multiplier",
    "hall_multiplier", "rdp_multiplier", "setconv_sensitivities",
    "COMPOSITIONS", "DEFAULT_COMPOSITION", "LEGACY_COMPOSITION", "composition_rule",
    "ApproxDpEvent", "CONVERSIONS", "CalibrationResult", "ComposedEvent", "EVENT_TYPES", "EventBatch", "GaussianEvent",
    "GdpEvent", "Guarantee", "LinearRegressionPosteriorEvent", "Neighbouring", "SampleThenOptimiseEvent",
    "PUBLISHED_WARNING", "PosteriorSampleEvent", "PrivacyCertificate", "PrivacyEvent",
    "PureDpEvent", "SensitivityBounds", "TabulatedRdpEvent", "ZcdpEvent", "alpha_max", "calibrate",
    "calibrate_gaussian", "certify", "compose_mu", "delta",
    "delta_constant", "delta_diagonal", "delta_exp1d", "delta_generic", "delta_rkhs", "epsilon", "epsilon_from_rdp",
    "event_from_dict", "event_from_json", "feasible_side", "gaussian_noise_std", "gdp_delta", "gdp_epsilon", "gdp_mu",
    "log_delta_from_rdp", "minimize_over_alpha", "phi_n", "psi_alpha", "rdp", "rdp_covariance_term", "rdp_mean_term",
    "rdp_posterior_sample", "register_event", "sensitivity_bounds", "tau_tilde", "v_bar", "v_generic",
    "SelectionBudget", "SelectionEvent", "liu_talwar_budget", "zcdp_epsilon", "zcdp_rho_for",
]
