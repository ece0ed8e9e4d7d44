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

/// A non-negative integer argument up to `max`, taken as any Python int so that a
/// negative or huge value is a [`config`] error naming the argument ("value_bound must
/// be between 0 and 2^64-1, got -5") rather than pyo3's bare `OverflowError`.
pub(crate) fn uint(
    py: Python<'_>,
    name: &str,
    value: &Bound<'_, PyAny>,
    max: u128,
) -> PyResult<u128> {
    let bound = match max {
        m if m == u128::MAX => "2^128-1".to_string(),
        m if m == u128::from(u64::MAX) => "2^64-1".to_string(),
        m if m == u128::from(u32::MAX) => "2^32-1".to_string(),
        m => m.to_string(),
    };
    let out_of_range = |shown: String| {
        config(
            py,
            format!("{name} must be between 0 and {bound}, got {shown}"),
        )
    };
    let shown = || {
        let text = value
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".into());
        match text.char_indices().nth(60) {
            Some((cut, _)) => format!("{}...", &text[..cut]),
            None => text,
        }
    };
    if !value.is_instance_of::<pyo3::types::PyInt>() {
        return Err(config(
            py,
            format!("{name} must be an integer, got {}", shown()),
        ));
    }
    match value.extract::<i128>() {
        Ok(v) => u128::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(|| out_of_range(v.to_string())),
        // Beyond i128: still fine for a u128 argument if non-negative and in range.
        Err(_) => match value.extract::<u128>() {
            Ok(v) if v <= max => Ok(v),
            _ => Err(out_of_range(shown())),
        },
    }
}

/// [`uint`] for a `u64` argument.
pub(crate) fn u64_arg(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    uint(py, name, value, u128::from(u64::MAX)).map(|v| v as u64)
}

/// [`uint`] for a `u32` argument.
pub(crate) fn u32_arg(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u32> {
    uint(py, name, value, u128::from(u32::MAX)).map(|v| v as u32)
}
