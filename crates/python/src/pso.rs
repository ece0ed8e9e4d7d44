//! A set-operation party (Chen et al. 2024: psi, psi-card, psi-card-sum, psu, psi-share,
//! private-id) for Python: the CLI's settings as keyword arguments, the same
//! `pso::new_party` state machine, the same RESULT.json, and the rows the CLI would
//! write with `--output-rows`, with the caller's own rows pointed at.

use std::sync::Arc;

use privset_crypto::cwprf::CwPrfId;
use privset_protocols::Party;
use privset_protocols::pso::{
    self, Construction, LastMessage, Operation, PsoChoices, PsoConfig, PsoOutput,
    PsoParty as Machine, PsoRole, Rows, transfer,
};
use privset_run::report::{self, PsoReport};
use privset_run::{Failure, Metered};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::errors::{self, IntoPy};
use crate::input::{Input, InputData};
use crate::link::LinkArgs;
use crate::play::{self, Paired, Playable};

/// One party of a set operation with its validated input and settings.
#[pyclass(frozen, module = "privset._native")]
pub struct PsoParty {
    spec: Arc<Spec>,
}

struct Spec {
    role: PsoRole,
    config: PsoConfig,
    input: Arc<InputData>,
}

/// A finished run: RESULT.json's structure and the full output (for the rows).
pub(crate) struct Outcome {
    report: PsoReport,
    output: PsoOutput,
}

impl Playable for Spec {
    type Machine = Machine;
    type Outcome = Outcome;

    fn label(&self) -> String {
        self.names().0.to_string()
    }

    fn machine(&self, seed: [u8; 32]) -> Result<Self::Machine, Failure> {
        let mut party = pso::new_party(self.role, &self.config, self.input.dataset.clone(), seed)?;
        party.agree(self.input.agreed.clone())?;
        Ok(party)
    }

    fn party(machine: &mut Self::Machine) -> &mut dyn Party {
        machine.as_mut()
    }

    fn outcome(&self, machine: Self::Machine, run: Metered) -> Result<Outcome, Failure> {
        let output = machine.into_output().ok_or_else(play::no_output)?;
        let rows = output.rows().map(|r| r.len());
        let items = self.input.dataset.ids.len();
        let report = PsoReport::new(&self.config, self.role, &output, items, rows, None, run);
        Ok(Outcome { report, output })
    }
}

impl Paired for Spec {
    fn names(&self) -> (&'static str, &'static str) {
        match self.role {
            PsoRole::Receiver => ("receiver", "sender"),
            PsoRole::Sender => ("sender", "receiver"),
        }
    }
}

/// RESULT.json and the rows, for Python (see [`to_python`]).
type PyOutcome<'py> = (String, Option<(&'static str, Bound<'py, PyList>)>);

/// What Python gets: `(RESULT.json, rows)`, rows being `None` or `(kind, list)`:
/// * `"items"` (psi intersection, psu union): `(own_row | None, identifier bytes)`;
/// * `"shares"` (psi-share): `(index, share bytes)`;
/// * `"private_id"`: `(private_id hex, own_row | None, own identifier bytes | None)`,
///   one per union identifier in sorted order.
///
/// `own_row` is the 0-based row of the caller's in-memory input holding the item
/// (`None` for a CSV input or a peer's item).
fn to_python<'py>(
    py: Python<'py>,
    input: &InputData,
    outcome: Outcome,
) -> PyResult<PyOutcome<'py>> {
    let json = serde_json::to_string(&outcome.report)
        .map_err(|e| errors::to_py(py, Failure::other(e.to_string())))?;
    let output = outcome.output;
    let tuple = |items: Vec<Bound<'py, PyAny>>| PyTuple::new(py, items);
    let bytes = |b: &[u8]| PyBytes::new(py, b).into_any();
    let rows = match output.rows() {
        Some(Rows::Items(items)) => {
            let list = PyList::empty(py);
            for item in items {
                list.append((input.row_of(item), bytes(item)))?;
            }
            Some(("items", list))
        }
        Some(Rows::Shares(shares)) => {
            let list = PyList::empty(py);
            for s in shares {
                list.append((s.index, bytes(&s.share)))?;
            }
            Some(("shares", list))
        }
        Some(Rows::PrivateId(table)) => {
            let ids = &input.dataset.ids;
            let list = PyList::empty(py);
            for (id, own) in report::private_id_rows(table) {
                let own = own.map(|i| ids[i].as_slice());
                list.append(tuple(vec![
                    hex::encode(id).into_pyobject(py)?.into_any(),
                    own.and_then(|b| input.row_of(b))
                        .into_pyobject(py)?
                        .into_any(),
                    own.map(bytes).into_pyobject(py)?.into_any(),
                ])?)?;
            }
            Some(("private_id", list))
        }
        None => None,
    };
    Ok((json, rows))
}

#[pymethods]
impl PsoParty {
    /// Validates `input` and the settings for `operation` ("psi", ...) and `role`
    /// ("receiver" or "sender"), before anything is sent. Defaults are the CLI's.
    #[new]
    #[pyo3(signature = (operation, role, input, *, group, mqrpmt, last_message, value_bound, max_peer_items))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        operation: &str,
        role: &str,
        input: &Input,
        group: Option<&str>,
        mqrpmt: Option<&str>,
        last_message: Option<&str>,
        value_bound: &Bound<'_, PyAny>,
        max_peer_items: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let (role, config) = settings(
            py,
            operation,
            role,
            group,
            mqrpmt,
            last_message,
            value_bound,
            max_peer_items,
        )?;
        pso::validate(role, &config, &input.data.dataset)
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

    /// "receiver" or "sender".
    #[getter]
    fn role(&self) -> &'static str {
        self.spec.role.name()
    }

    /// "psi", "psu", ...
    #[getter]
    fn operation(&self) -> &'static str {
        self.spec.config.operation.name()
    }

    /// Runs against a peer reached as `link` says; returns `(RESULT.json, rows)`.
    #[pyo3(signature = (link, prices, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        link: LinkArgs,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<PyOutcome<'py>> {
        let outcome = play::remote(py, self.spec.clone(), link, prices, progress.as_ref())?;
        to_python(py, &self.spec.input, outcome)
    }

    /// Runs this party and `other` (same operation, opposite role) in this process over
    /// an in-memory link; returns both `(RESULT.json, rows)`, this party's first.
    #[pyo3(signature = (other, timeout, prices, progress=None))]
    fn run_local<'py>(
        &self,
        py: Python<'py>,
        other: &PsoParty,
        timeout: f64,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(PyOutcome<'py>, PyOutcome<'py>)> {
        if self.spec.config.operation != other.spec.config.operation {
            return Err(errors::config(
                py,
                format!(
                    "a local run needs two parties of one operation, not {} and {}",
                    self.spec.config.operation.name(),
                    other.spec.config.operation.name()
                ),
            ));
        }
        let (mine, theirs) = play::local(
            py,
            self.spec.clone(),
            other.spec.clone(),
            timeout,
            prices,
            progress.as_ref(),
        )?;
        Ok((
            to_python(py, &self.spec.input, mine)?,
            to_python(py, &other.spec.input, theirs)?,
        ))
    }
}

/// A set operation's role and settings from the keyword arguments (`None`: the
/// default, as [`PsoChoices::resolve`] gives it to the CLI too); shared by the party
/// class and the bucketed run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn settings(
    py: Python<'_>,
    operation: &str,
    role: &str,
    group: Option<&str>,
    mqrpmt: Option<&str>,
    last_message: Option<&str>,
    value_bound: &Bound<'_, PyAny>,
    max_peer_items: &Bound<'_, PyAny>,
) -> PyResult<(PsoRole, PsoConfig)> {
    let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
    let max_peer_items = errors::u64_arg(py, "max_peer_items", max_peer_items)?;
    let operation = errors::named(
        py,
        "operation",
        operation,
        Operation::from_name(operation),
        "psi, psi-card, psi-card-sum, psu, psi-share, private-id",
    )?;
    let role = match role {
        "receiver" => PsoRole::Receiver,
        "sender" => PsoRole::Sender,
        other => {
            return Err(errors::config(
                py,
                format!("role must be 'receiver' or 'sender', not {other:?}"),
            ));
        }
    };
    let choices = PsoChoices {
        cwprf: group
            .map(|g| {
                errors::named(
                    py,
                    "group",
                    g,
                    CwPrfId::from_name(g),
                    "ristretto255, p256, p256-compressed, x25519",
                )
            })
            .transpose()?,
        construction: mqrpmt
            .map(|m| {
                errors::named(
                    py,
                    "mqrpmt",
                    m,
                    Construction::from_name(m),
                    "cwprf, poprf, vole",
                )
            })
            .transpose()?,
        last_message: last_message
            .map(|l| {
                errors::named(
                    py,
                    "last_message",
                    l,
                    LastMessage::from_name(l),
                    "list, bloom, gcs, ordered",
                )
            })
            .transpose()?,
        max_value: Some(value_bound),
        max_peer_items: Some(max_peer_items),
    };
    let config = choices
        .resolve(operation)
        .map_err(Failure::from)
        .py_err(py)?;
    Ok((role, config))
}

/// Opens one psi-share row: XORs the receiver's and the sender's shares of the same
/// index and decodes the identifier they encode.
#[pyfunction]
pub(crate) fn open_share<'py>(
    py: Python<'py>,
    receiver_share: &[u8],
    sender_share: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    if receiver_share.len() != sender_share.len() || receiver_share.len() < 2 {
        return Err(errors::to_py(
            py,
            Failure::input(format!(
                "shares of one identifier have the same length (at least 2 bytes); got {} and {}",
                receiver_share.len(),
                sender_share.len()
            )),
        ));
    }
    let slot: Vec<u8> = receiver_share
        .iter()
        .zip(sender_share)
        .map(|(a, b)| a ^ b)
        .collect();
    let item = transfer::decode_item(&slot).map_err(|_| {
        errors::to_py(
            py,
            Failure::input(
                "these shares do not open to an identifier: are they the same index of the same run?",
            ),
        )
    })?;
    Ok(PyBytes::new(py, item))
}
