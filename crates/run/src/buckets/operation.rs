//! What a bucketed job runs: a set operation of Chen et al. 2024 or the intersection-sum
//! of Ion et al. 2020, and the few of its settings the job's layers read.

use privset_crypto::ahe::HeId;
use privset_crypto::cwprf::CwPrfId;
use privset_protocols::pi_sum::{PiSumConfig, PiSumProtocol};
use privset_protocols::pso::{Construction, LastMessage, Operation, PsoConfig, PsoRole};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::wire::ProtocolId;

use crate::fail::Failure;

/// The operation of a bucketed job, with its settings. Its two parties are the bucketed
/// sessions' participants 0 and 1: a set operation's receiver and sender, pi-sum's P1
/// and P2 (both given as a [`PsoRole`]).
#[derive(Clone, Copy, Debug)]
pub enum JobConfig<'a> {
    Pso(&'a PsoConfig),
    PiSum(&'a PiSumConfig),
}

impl JobConfig<'_> {
    pub fn name(self) -> &'static str {
        match self {
            JobConfig::Pso(c) => c.operation.name(),
            JobConfig::PiSum(_) => "pi-sum",
        }
    }

    /// The protocol the job's plan and units name.
    pub fn protocol(self) -> ProtocolId {
        match self {
            JobConfig::Pso(c) => c.operation.protocol(),
            JobConfig::PiSum(_) => ProtocolId::PiSum,
        }
    }

    /// The name of the party playing `role`.
    pub fn role_name(self, role: PsoRole) -> &'static str {
        match (self, role) {
            (JobConfig::Pso(_), r) => r.name(),
            (JobConfig::PiSum(_), PsoRole::Receiver) => "p1",
            (JobConfig::PiSum(_), PsoRole::Sender) => "p2",
        }
    }

    pub fn max_value(self) -> u64 {
        match self {
            JobConfig::Pso(c) => c.max_value,
            JobConfig::PiSum(c) => c.max_value,
        }
    }

    pub fn max_peer_items(self) -> u64 {
        match self {
            JobConfig::Pso(c) => c.max_peer_items,
            JobConfig::PiSum(c) => c.max_peer_items,
        }
    }

    pub fn cwprf(self) -> CwPrfId {
        match self {
            JobConfig::Pso(c) => c.cwprf,
            JobConfig::PiSum(c) => c.group,
        }
    }

    /// How the sender's last message (pi-sum: P2's set Z) encodes a set.
    pub fn set_encoding(self) -> SetEncoding {
        match self {
            JobConfig::Pso(c) => match c.last_message {
                LastMessage::Set(e) => e,
                LastMessage::Ordered => SetEncoding::List,
            },
            JobConfig::PiSum(c) => c.z_encoding,
        }
    }

    /// Refuses what a bucketed run of this job does not do, before anything is staged;
    /// `values` is the number of value columns the party gave.
    pub fn check(self, role: PsoRole, values: usize) -> Result<(), Failure> {
        match self {
            JobConfig::Pso(c) => check_pso(c, role, values),
            JobConfig::PiSum(c) => check_pi_sum(c, role, values),
        }
    }
}

/// The operations that run in buckets, and why the others do not yet.
pub fn check_operation(operation: Operation) -> Result<(), Failure> {
    match operation {
        Operation::Psi
        | Operation::PsiCard
        | Operation::PsiCardSum
        | Operation::Psu
        | Operation::PrivateId => Ok(()),
        other => Err(Failure::config(format!(
            "--buckets runs psi, psi-card, psi-card-sum, psu and private-id only for now: {} \
             would show the receiver each bucket's intersection size, more than the \
             unbucketed run reveals (docs/scale.md)",
            other.name(),
        ))),
    }
}

fn check_pso(config: &PsoConfig, role: PsoRole, values: usize) -> Result<(), Failure> {
    check_operation(config.operation)?;
    if config.operation == Operation::Psi {
        return Ok(());
    }
    if config.construction != Construction::Cwprf {
        return Err(Failure::config(format!(
            "--buckets runs {} on the cwPRF mqRPMT only: use --mqrpmt cwprf",
            config.operation.name()
        )));
    }
    let needs = usize::from(config.operation == Operation::PsiCardSum && role == PsoRole::Sender);
    if values != needs {
        return Err(Failure::input(format!(
            "{} {}: {needs} value column(s) needed, {values} given",
            config.operation.name(),
            role.name()
        )));
    }
    if config.last_message == LastMessage::Ordered {
        return Err(Failure::config("--last-message ordered is for psi only"));
    }
    Ok(())
}

fn check_pi_sum(config: &PiSumConfig, role: PsoRole, values: usize) -> Result<(), Failure> {
    if config.protocol != PiSumProtocol::Ddh {
        return Err(Failure::config(format!(
            "--buckets runs pi-sum's ddh protocol (Ion et al. 2020, Fig. 2) only, not {}",
            config.protocol.name()
        )));
    }
    if config.reverse {
        return Err(Failure::config(
            "--buckets does not run the reverse variant yet: run it unbucketed",
        ));
    }
    if config.he == HeId::Rlwe {
        return Err(Failure::config(
            "--buckets adds the parts' encrypted sums with paillier or elgamal only: use \
             --values-he paillier or elgamal",
        ));
    }
    if config.sum_of_squares && config.max_value > u64::from(u32::MAX) {
        return Err(Failure::config(
            "--sum-of-squares needs a value bound below 2^32",
        ));
    }
    let max_columns = privset_protocols::pi_sum::MAX_VALUE_COLUMNS;
    match role {
        PsoRole::Receiver if values > 0 => Err(Failure::config("P1 has no value columns")),
        PsoRole::Sender if values == 0 || values > max_columns => Err(Failure::config(format!(
            "P2 needs 1 to {max_columns} value columns, {values} given"
        ))),
        _ => Ok(()),
    }
}
