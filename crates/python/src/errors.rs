//! A failed run as a Python exception. The classes live in `privset/errors.py` (so
//! they can have several bases, docstrings and attributes); this module picks the class
//! from the failure's kind and passes the CLI's message unchanged.

use privset_run::{Failure, FailureKind};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Python class for a kind of failure (see `privset/errors.py`).
fn class_name(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Input => "InputError",
        FailureKind::Config => "ConfigurationError",
        FailureKind::Peer => "PeerMisbehaved",
        FailureKind::Rejected => "AuthorizationRejected",
        FailureKind::Transport => "TransportError",
        FailureKind::Cancelled | FailureKind::Other => "PrivsetError",
    }
}

/// The exception for `failure`: `str(e)` is the CLI's message; `e.line` the input line
/// to blame (InputError), when there is one.
pub(crate) fn to_py(py: Python<'_>, failure: Failure) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = py
            .import("privset.errors")?
            .getattr(class_name(failure.kind))?;
        let kwargs = PyDict::new(py);
        if failure.kind == FailureKind::Input {
            kwargs.set_item("line", failure.line)?;
        }
        Ok(PyErr::from_value(
            class.call((failure.message.as_str(),), Some(&kwargs))?,
        ))
    };
    build().unwrap_or_else(|e| e)
}

/// Shorthand for a configuration error raised by the bindings themselves (a bad
/// keyword argument), worded for Python callers.
pub(crate) fn config(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, Failure::config(message))
}

/// A setting given by name (`group="p256"`), or a configuration error listing the
/// accepted names.
pub(crate) fn named<T>(
    py: Python<'_>,
    setting: &str,
    name: &str,
    found: Option<T>,
    expected: &str,
) -> PyResult<T> {
    found.ok_or_else(|| {
        config(
            py,
            format!("{setting} must be one of {expected}, not {name:?}"),
        )
    })
}

/// Converts `Result<T, Failure>` into `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Failure> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|f| to_py(py, f))
    }
}
