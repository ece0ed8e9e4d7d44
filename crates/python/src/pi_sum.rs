//! A PI-Sum party (Ion et al. 2020) for Python: the CLI's settings as keyword arguments, the
//! same `pi_sum::new_party` state machine, the same RESULT.json.

use std::sync::Arc;

use privset_crypto::ahe::{HeId, paillier};
use privset_crypto::cwprf::CwPrfId;
use privset_protocols::pi_sum::{self, PiSumConfig, PiSumOutput, PiSumProtocol, Role};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::{OutputParty, Party};
use privset_run::report::PiSumReport;
use privset_run::{Failure, Metered};
use pyo3::prelude::*;

use crate::errors::{self, IntoPy};
use crate::input::{Input, InputData};
use crate::link::LinkArgs;
use crate::play::{self, Paired, Playable};

/// One party of PI-Sum with its validated input and settings.
#[pyclass(frozen, module = "privset._native")]
pub struct PiSumParty {
    spec: Arc<Spec>,
}

/// What a run needs, shared with the worker thread.
struct Spec {
    role: Role,
    config: PiSumConfig,
    input: Arc<InputData>,
}

impl Playable for Spec {
    type Machine = Box<dyn OutputParty<PiSumOutput>>;
    /// RESULT.json.
    type Outcome = String;

    fn label(&self) -> String {
        self.names().0.to_string()
    }

    fn machine(&self, seed: [u8; 32]) -> Result<Self::Machine, Failure> {
        let mut party =
            pi_sum::new_party(self.role, &self.config, self.input.dataset.clone(), seed)?;
        party.agree(self.input.agreed.clone())?;
        Ok(party)
    }

    fn party(machine: &mut Self::Machine) -> &mut dyn Party {
        machine.as_mut()
    }

    fn outcome(&self, machine: Self::Machine, run: Metered) -> Result<String, Failure> {
        let output = machine.into_output().ok_or_else(play::no_output)?;
        let report = PiSumReport::new(
            &self.config,
            self.role,
            &output,
            self.input.dataset.ids.len(),
            run,
        );
        serde_json::to_string(&report).map_err(|e| Failure::other(e.to_string()))
    }
}

impl Paired for Spec {
    fn names(&self) -> (&'static str, &'static str) {
        match self.role {
            Role::P1 => ("p1", "p2"),
            Role::P2 => ("p2", "p1"),
        }
    }
}

#[pymethods]
impl PiSumParty {
    /// Validates `input` and the settings for `role` ("p1" or "p2"), before anything
    /// is sent. Defaults are the CLI's.
    #[new]
    #[pyo3(signature = (
        role, input, *, protocol, group, values_he, he_modulus_bits, dj_s, z_encoding, reverse,
        threshold, sum_of_squares, value_bound, sum_bound, max_peer_items
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        role: &str,
        input: &Input,
        protocol: &str,
        group: &str,
        values_he: &str,
        he_modulus_bits: &Bound<'_, PyAny>,
        dj_s: &Bound<'_, PyAny>,
        z_encoding: &str,
        reverse: bool,
        threshold: Option<&Bound<'_, PyAny>>,
        sum_of_squares: bool,
        value_bound: &Bound<'_, PyAny>,
        sum_bound: Option<&Bound<'_, PyAny>>,
        max_peer_items: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let role = match role {
            "p1" => Role::P1,
            "p2" => Role::P2,
            other => {
                return Err(errors::config(
                    py,
                    format!("role must be 'p1' or 'p2', not {other:?}"),
                ));
            }
        };
        let config = config(
            py,
            Settings {
                protocol,
                group,
                values_he,
                he_modulus_bits,
                dj_s,
                z_encoding,
                reverse,
                threshold,
                sum_of_squares,
                value_bound,
                sum_bound,
                max_peer_items,
            },
        )?;
        pi_sum::validate(role, &config, &input.data.dataset)
            .map_err(Failure::from)
            .py_err(py)?;
        Ok(Self {
            spec: Arc::new(Spec {
                role,
                config,
                input: input.data.clone(),
            }),
        })
    }

    /// "p1" or "p2".
    #[getter]
    fn role(&self) -> &'static str {
        self.spec.role.name()
    }

    /// Runs against a peer reached as `link` says; returns this party's RESULT.json.
    #[pyo3(signature = (link, prices, progress=None))]
    fn run(
        &self,
        py: Python<'_>,
        link: LinkArgs,
        prices: (f64, f64),
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        play::remote(py, self.spec.clone(), link, prices, progress.as_ref())
    }

    /// Runs this party and `other` (the opposite role) in this process over an
    /// in-memory link; returns both RESULT.json documents, this party's first.
    #[pyo3(signature = (other, timeout, prices, progress=None))]
    fn run_local(
        &self,
        py: Python<'_>,
        other: &PiSumParty,
        timeout: f64,
        prices: (f64, f64),
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(String, String)> {
        play::local(
            py,
            self.spec.clone(),
            other.spec.clone(),
            timeout,
            prices,
            progress.as_ref(),
        )
    }
}

/// PI-Sum's settings as Python passes them (the CLI's flags).
pub(crate) struct Settings<'a, 'py> {
    pub protocol: &'a str,
    pub group: &'a str,
    pub values_he: &'a str,
    pub he_modulus_bits: &'a Bound<'py, PyAny>,
    pub dj_s: &'a Bound<'py, PyAny>,
    pub z_encoding: &'a str,
    pub reverse: bool,
    pub threshold: Option<&'a Bound<'py, PyAny>>,
    pub sum_of_squares: bool,
    pub value_bound: &'a Bound<'py, PyAny>,
    pub sum_bound: Option<&'a Bound<'py, PyAny>>,
    pub max_peer_items: &'a Bound<'py, PyAny>,
}

/// The config the settings name, each checked with a clear error.
pub(crate) fn config(py: Python<'_>, settings: Settings<'_, '_>) -> PyResult<PiSumConfig> {
    let Settings {
        protocol,
        group,
        values_he,
        he_modulus_bits,
        dj_s,
        z_encoding,
        reverse,
        threshold,
        sum_of_squares,
        value_bound,
        sum_bound,
        max_peer_items,
    } = settings;
    let he_modulus_bits = errors::u32_arg(py, "he_modulus_bits", he_modulus_bits)?;
    let dj_s = errors::u32_arg(py, "dj_s", dj_s)?;
    let threshold = threshold
        .map(|t| errors::u64_arg(py, "threshold", t))
        .transpose()?;
    let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
    let sum_bound = sum_bound
        .map(|b| errors::uint(py, "sum_bound", b, u128::MAX))
        .transpose()?;
    let max_peer_items = errors::u64_arg(py, "max_peer_items", max_peer_items)?;
    Ok(PiSumConfig {
        protocol: errors::named(
            py,
            "protocol",
            protocol,
            PiSumProtocol::from_name(protocol),
            "ddh, rot, bloom",
        )?,
        group: errors::named(
            py,
            "group",
            group,
            CwPrfId::from_name(group),
            "ristretto255, p256, p256-compressed, x25519",
        )?,
        he: errors::named(
            py,
            "values_he",
            values_he,
            HeId::from_name(values_he),
            "paillier, elgamal, rlwe",
        )?,
        paillier: paillier::Params {
            modulus_bits: he_modulus_bits,
            s: dj_s,
        },
        z_encoding: errors::named(
            py,
            "z_encoding",
            z_encoding,
            SetEncoding::from_name(z_encoding),
            "list, gcs, bloom",
        )?,
        reverse,
        threshold,
        sum_of_squares,
        max_value: value_bound,
        max_sum: sum_bound,
        max_peer_items,
        ..PiSumConfig::default()
    })
}
