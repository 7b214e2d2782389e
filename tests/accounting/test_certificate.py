"""Privacy certificates (certify / PrivacyCertificate) and the ``privgp account`` calculator."""
from __future__ import annotations

import json
import math

import pytest

from privgp.accounting import (
    ApproxDpEvent,
    GaussianEvent,
    PosteriorSampleEvent,
    PrivacyCertificate,
    ZcdpEvent,
    certify,
    composition_rule,
    event_from_dict,
    rdp_posterior_sample,
)
from privgp.cli.main import main
from privgp.errors import InvalidParameterError, NumericalError
from privgp.mechanisms.posterior_sample import (
    certify_posterior_sample,
    check_certificate,
    delta_posterior_sampling,
    epsilon_posterior_sampling,
    posterior_sample_event,
)
from privgp.models.domain import Box
from privgp.models.kernels import Exponential

BASE = dict(kernel="exponential", lengthscale=1.0, domain=Box.unit(1), sensitivity="exp1d")


def test_certificate_records_the_event_lemmas_and_the_accountants_numbers():
    c = certify_posterior_sample(10, 1.0, 5.0, 0.05, L=3, eta=0.5, **BASE)
    res = epsilon_posterior_sampling(10, 1.0, 5.0, 0.05, L=3, eta=0.5, **BASE)
    ev = c.event
    assert isinstance(ev, PosteriorSampleEvent)
    assert (ev.n, ev.kernel, ev.r, ev.sigma, ev.eta, ev.L) == (10, "exponential", 1.0, 5.0, 0.5, 3)
    assert c.public == {"kernel": "exponential", "lengthscale": 1.0, "domain": Box.unit(1).to_dict()}
    assert ev.sensitivity == "exp1d" and ev.constants == "proven" and c.delta == 0.05
    assert c.conversion == "improved" and c.solved_for == "epsilon" and c.alpha_optimised and c.method == "rdp"
    assert c.epsilon == float(res.epsilon) and c.alpha == float(res.alpha) and c.rdp == float(res.rdp)
    d = c.details
    assert (d["V_n"], d["Delta_n"], d["kappa"]) == (float(res.V), float(res.Delta), float(res.kappa))
    assert "B.7" in d["lemma_Delta"] and "Prop. 3" in d["lemma_V"]
    assert any("Thm 3.1" in x for x in c.lemmas)
    assert c.rdp == pytest.approx(3 * float(rdp_posterior_sample(c.alpha, d["V_n"], d["Delta_n"], 1.0, 5.0, 0.5)),
                                  rel=1e-13)
    assert c.covered and c.warnings == ()
    text = " ".join(c.assumptions)
    for words in ("replacing one record", "|y| <= M_Y", "the public domain is [0, 1]", "independently of the private data",
                  "exact draw", "1-D interval", "prior noise"):
        assert words in text
    assert c.privgp_version and "posterior sample paths" in c.mechanism


def test_certificate_json_round_trip_including_infinities():
    for c in (certify_posterior_sample(10, 1.0, 5.0, 0.05, **BASE),
              certify_posterior_sample(10, 1.0, math.inf, 0.05, alpha=3.0, **BASE),  # alpha beyond the range
              certify_posterior_sample(20, 0.5, 1.0, None, epsilon=2.0, kernel="matern32", lengthscale=0.4,
                                       domain=Box((0, 0), (2, 1))),
              certify(GaussianEvent(1.0, 2.0), 1e-5), certify(ZcdpEvent(0.1) + GaussianEvent(1.0, 3.0), epsilon=2.0)):
        text = c.to_json()
        assert "Infinity" not in text and "NaN" not in text
        d = json.loads(text)
        for key in ("epsilon", "delta", "alpha", "rdp", "event", "conversion", "method", "covered", "warnings",
                    "lemmas", "assumptions", "details"):
            assert key in d
        assert event_from_dict(d["event"]) == c.event
        back = PrivacyCertificate.from_json(text)
        assert back == c and back.to_dict() == d
        assert back.recompute() == c
    inf_cert = certify_posterior_sample(10, 1.0, math.inf, 0.05, alpha=3.0, **BASE)
    assert math.isinf(inf_cert.epsilon) and json.loads(inf_cert.to_json())["epsilon"] == "inf"
    assert any("+inf" in w for w in inf_cert.warnings)
    with pytest.raises(InvalidParameterError, match="certificate"):
        PrivacyCertificate.from_dict({"n": 3})
    with pytest.raises(InvalidParameterError, match="certificate"):
        PrivacyCertificate.from_json("{not json")


def test_certificates_record_their_composition_rule_and_recompute_with_it():
    """A new certificate states the profile rule; one that states none (privgp 0.1) recomputes with basic
    composition, to the numbers it shows; one whose numbers do not follow its stated rule does not recompute
    to itself."""
    ev = ZcdpEvent(0.01) + ApproxDpEvent(0.1, 1e-6).times(5)
    new = certify(ev, 1e-4)
    assert new.composition == "profile" and new.method == "profile"
    assert json.loads(new.to_json())["composition"] == "profile"
    assert "privacy profiles" in new.summary()
    with composition_rule("basic"):
        old = certify(ev, 1e-4)
    assert old.composition == "basic" and old.method == "rdp" and new.epsilon < old.epsilon
    stated_none = {k: x for k, x in old.to_dict().items() if k != "composition"}
    back = PrivacyCertificate.from_dict(stated_none)
    assert back.composition == "basic" and back.recompute() == old  # whatever the rule in force
    assert PrivacyCertificate.from_json(new.to_json()).recompute() == new
    forged = PrivacyCertificate.from_dict({**old.to_dict(), "composition": "profile"})
    assert forged.recompute().epsilon == new.epsilon != forged.epsilon
    with pytest.raises(InvalidParameterError, match="composition"):
        PrivacyCertificate.from_dict({**new.to_dict(), "composition": "pld"})
    # no (epsilon, delta) part: both rules give the same numbers
    g = certify(GaussianEvent(1.0, 2.0), 1e-5)
    with composition_rule("basic"):
        assert certify(GaussianEvent(1.0, 2.0), 1e-5).epsilon == g.epsilon


def test_gaussian_certificates_use_the_exact_profile():
    c = certify(GaussianEvent(1.0, 2.0), 1e-5)
    assert c.method == "exact-gdp" and math.isnan(c.alpha)
    rdp_only = certify(GaussianEvent(1.0, 2.0), 1e-5, exact=False)
    assert rdp_only.method == "rdp" and rdp_only.epsilon > c.epsilon
    assert rdp_only.recompute() == rdp_only and c.recompute() == c


def test_published_constants_are_labelled_not_covered():
    c = certify_posterior_sample(10, 1.0, 5.0, 0.05, constants="published", conversion="mironov", **BASE)
    assert not c.covered and any("NOT covered" in w for w in c.warnings)
    assert c.epsilon == pytest.approx(5.0537, abs=1e-4)  # docs/notes/seed000_published_scripts.md, sec. 2.3
    assert "NOT COVERED" in c.summary()


def test_given_alpha_and_given_epsilon():
    c = certify_posterior_sample(10, 1.0, 5.0, 0.05, alpha=1.5, **BASE)
    assert not c.alpha_optimised and c.alpha == 1.5
    assert c.epsilon == float(epsilon_posterior_sampling(10, 1.0, 5.0, 0.05, alpha=1.5, **BASE).epsilon)
    opt = certify_posterior_sample(10, 1.0, 5.0, 0.05, **BASE)
    assert opt.epsilon <= c.epsilon
    d = certify_posterior_sample(10, 1.0, 5.0, None, epsilon=opt.epsilon, **BASE)
    assert d.solved_for == "delta" and d.epsilon == opt.epsilon
    assert d.delta <= 0.05 * (1 + 1e-6)  # epsilon(delta) and delta(epsilon) are inverse up to the search tolerance
    assert d.delta == pytest.approx(delta_posterior_sampling(10, 1.0, 5.0, opt.epsilon, **BASE).delta, rel=1e-14)
    with pytest.raises(InvalidParameterError, match="delta/epsilon"):
        certify_posterior_sample(10, 1.0, 5.0, 0.05, epsilon=1.0, **BASE)
    with pytest.raises(InvalidParameterError, match="alpha"):
        certify_posterior_sample(10, 1.0, 5.0, 0.05, alpha=1.0, **BASE)


def test_kernel_instances_and_event():
    c = certify_posterior_sample(10, 1.0, 5.0, 0.05, kernel=Exponential(0.5), lengthscale=None, domain=None,
                                 sensitivity="exp1d")
    assert c.public["lengthscale"] == 0.5 and c.public["domain"] == Box.unit(1).to_dict()
    assert c == certify_posterior_sample(10, 1.0, 5.0, 0.05, kernel="exponential", lengthscale=0.5, domain=None,
                                         sensitivity="exp1d")
    assert c.event == posterior_sample_event(10, 1.0, 5.0, kernel="exponential", lengthscale=0.5, sensitivity="exp1d")
    assert c.event.rdp(c.alpha) == pytest.approx(c.rdp, rel=1e-14)


def test_check_certificate_rederives_the_kernel_facts_from_public_settings():
    c = certify_posterior_sample(30, 1.0, 2.0, 1e-3, kernel="matern32", lengthscale=0.4, domain=Box((0, 0), (2, 1)))
    assert check_certificate(c) == c
    d = c.to_dict()
    d["public"]["lengthscale"] = 0.8  # a published certificate whose kappa does not match its settings
    with pytest.raises(NumericalError, match="kernel facts"):
        check_certificate(PrivacyCertificate.from_dict(d))
    d = c.to_dict()
    d["epsilon"] = c.epsilon / 2  # a tampered epsilon
    with pytest.raises(NumericalError, match="recomputed"):
        check_certificate(PrivacyCertificate.from_dict(d))


# ----------------------------------------------------------------------------- CLI
ARGS = ["account", "--n", "10", "--kernel", "exponential", "--lengthscale", "1", "--r", "1", "--sigma", "5",
        "--sensitivity", "exp1d"]


def run_cli(capsys, *extra):
    code = main(ARGS + list(extra))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_has_the_contract_keys(capsys):
    code, out, _ = run_cli(capsys, "--delta", "0.05", "--json")
    d = json.loads(out)
    assert code == 0
    for key in ("epsilon", "delta", "alpha", "rdp", "event", "details", "conversion", "covered", "warnings"):
        assert key in d
    for key in ("V_n", "Delta_n", "kappa"):
        assert key in d["details"]
    assert d["epsilon"] == certify_posterior_sample(10, 1.0, 5.0, 0.05, **BASE).epsilon and d["conversion"] == "improved"


def test_cli_published_summary_says_not_covered(capsys):
    code, out, _ = run_cli(capsys, "--delta", "0.05", "--constants", "published", "--conversion", "mironov")
    assert code == 0 and "NOT COVERED" in out and "5.05372" in out


def test_cli_sigma_inf_alpha_and_epsilon_modes(capsys):
    code, out, _ = run_cli(capsys, "--delta", "0.05", "--sigma", "inf", "--alpha", "1.5", "--json")
    d = json.loads(out)
    assert code == 0 and d["event"]["sigma"] == "inf" and d["alpha"] == 1.5 and not d["alpha_optimised"]
    det = d["details"]
    assert d["rdp"] == pytest.approx(float(rdp_posterior_sample(1.5, det["V_n"], det["Delta_n"], 1.0, math.inf)))
    code, out, _ = run_cli(capsys, "--epsilon", "3", "--json")
    d = json.loads(out)
    assert code == 0 and d["solved_for"] == "delta" and d["epsilon"] == 3.0 and 0 < d["delta"] < 1
    code, out, _ = run_cli(capsys, "--delta", "0.05", "--dim", "1", "--lower", "0", "--upper", "2", "--json")
    assert json.loads(out)["public"]["domain"] == {"lower": [0.0], "upper": [2.0]}


@pytest.mark.parametrize("extra,needle", [
    (["--delta", "1.5"], "delta"), (["--delta", "0.05", "--alpha", "1"], "alpha"),
    (["--delta", "0.05", "--dim", "2"], "B.7"), (["--delta", "0.05", "--M-Y", "0"], "--M-Y must be"),
    (["--delta", "0.05", "--r", "0"], "r must"), (["--delta", "0.05", "--lower", "0"], "--lower"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, extra, needle):
    code, out, err = run_cli(capsys, *extra)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_cli_requires_delta_or_epsilon_and_documents_both(capsys):
    assert main(ARGS) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgp: error: --delta/--epsilon must be exactly one") and len(err.strip().splitlines()) == 1
    assert main(["account", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "--epsilon" in help_text and "smallest" in help_text and "NOT covered" in help_text
