//! The state directory of one bucketed job: what was staged, the plan, and each
//! finished bucket. Every file is written atomically (a crash leaves the old file or
//! the new one, never half of one), so a party started again with the same command
//! finds a consistent record and continues from it.
//!
//! ```text
//! <state dir>/bucketed-<hash of operation, role and output path>/
//!   job.json       the input it was staged from (path, size, modification time), the
//!                  settings that shape staging, and what staging found
//!   stage/         rows spilled by a private hash (step 1)
//!   plan.json      the plan agreed with the peer (id, key, bucket count, sizes)
//!   bucket/        this party's rows per bucket (step 3); for a value-partitioned job
//!                  (`super::value`) its chunks, PRF values by part, matches and sums
//!   done/N.json    a finished bucket's (or unit's) figures; done/N.rows its output rows, if any
//!   complete       both parties have every bucket: only the result is left to write
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Staged;
use super::spill::{SpillReader, SpillWriter};
use crate::fail::Failure;
use crate::link::write_private;

const VERSION: u32 = 1;

/// What staging depends on: if any of it changed, the staged rows are stale.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Fingerprint {
    pub operation: String,
    pub role: String,
    pub input: String,
    pub input_bytes: u64,
    pub input_modified_ns: u128,
    /// Key, value and duplicate settings, as the front end spells them.
    pub settings: String,
}

impl Fingerprint {
    /// The fingerprint of `input` as it is now on disk.
    pub fn of_input(
        operation: &str,
        role: &str,
        input: &Path,
        settings: String,
    ) -> Result<Self, Failure> {
        let meta = std::fs::metadata(input)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", input.display())))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            operation: operation.into(),
            role: role.into(),
            input: std::path::absolute(input)
                .unwrap_or_else(|_| input.to_path_buf())
                .display()
                .to_string(),
            input_bytes: meta.len(),
            input_modified_ns: modified,
            settings,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct JobFile {
    version: u32,
    fingerprint: Fingerprint,
    staged: Staged,
}

/// The plan both parties agreed on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Plan {
    /// Hex of the plan's id.
    pub id: String,
    /// Hex of the partition key.
    pub key: String,
    pub buckets: u32,
    pub items: u64,
    pub peer_items: u64,
    /// The public size of this party's buckets (0 for a value-partitioned job).
    pub padded: u64,
    /// Hex of this party's private secret for the job's PRF key (value-partitioned jobs:
    /// every start evaluates with the same key, so a unit run again sends the same bytes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub secret: String,
}

impl Plan {
    pub fn id_bytes(&self) -> [u8; 32] {
        decode32(&self.id)
    }
}

fn decode32(text: &str) -> [u8; 32] {
    hex::decode(text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0u8; 32])
}

/// A finished bucket, as RESULT.json's `buckets` section lists it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BucketFigures {
    pub bucket: u32,
    /// This party's real items in the bucket (the rest of `padded` were dummies).
    pub items: u64,
    pub padded: u64,
    /// The peer's bucket size as its session announced it (its public padded size).
    pub peer_padded: u64,
    /// Rows of the bucket's output (psi receiver: matches), if the party has rows.
    pub rows: Option<u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    /// Sessions this party ran for the bucket (more than 1 when the peer had missed it).
    #[serde(default = "one")]
    pub runs: u32,
}

fn one() -> u32 {
    1
}

/// One job's directory.
pub struct JobDir {
    pub dir: PathBuf,
}

impl JobDir {
    /// The directory of the job that writes `output` as `role` of `operation` with the
    /// peer `link` names (an address or exchange directory), under `state_dir`: two
    /// jobs differing in any of these never share state.
    pub fn new(state_dir: &Path, operation: &str, role: &str, output: &Path, link: &str) -> Self {
        let mut h = Sha256::new();
        h.update(operation.as_bytes());
        h.update([0]);
        h.update(role.as_bytes());
        h.update([0]);
        let output = std::path::absolute(output).unwrap_or_else(|_| output.to_path_buf());
        h.update(output.as_os_str().as_encoded_bytes());
        h.update([0]);
        h.update(link.as_bytes());
        let name = format!("bucketed-{}", hex::encode(&h.finalize()[..8]));
        let job = Self {
            dir: state_dir.join(name),
        };
        // What a party killed during `remove` left behind.
        let _ = std::fs::remove_dir_all(job.trash());
        job
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Option<T>, Failure> {
        let path = self.file(name);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                Failure::other(format!(
                    "corrupt bucket state {} ({e}); remove {} to start the job over",
                    path.display(),
                    self.dir.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Failure::other(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<(), Failure> {
        let bytes = serde_json::to_vec_pretty(value).expect("plain data serializes");
        write_private(&self.file(name), &bytes)
    }

    fn fresh_dir(&self, name: &str) -> Result<(), Failure> {
        let path = self.file(name);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| Failure::other(format!("cannot create {}: {e}", path.display())))
    }

    /// What staging found, if the input was staged under this fingerprint; anything
    /// staged from another input, or other settings, is removed.
    pub fn staged(&self, fingerprint: &Fingerprint) -> Result<Option<Staged>, Failure> {
        // A record this version cannot read is stale too; an unreadable file is an error.
        let job: Option<JobFile> = match self.read_json("job.json") {
            Ok(job) => job,
            Err(e) if self.file("job.json").exists() && e.message.contains("corrupt") => None,
            Err(e) => return Err(e),
        };
        match job {
            Some(j) if j.version == VERSION && &j.fingerprint == fingerprint => Ok(Some(j.staged)),
            _ => {
                self.remove();
                Ok(None)
            }
        }
    }

    /// What staging found, for a step that must not stage (a bucket task of a
    /// distributed job): anything but this very input's record is an error.
    pub fn staged_already(&self, fingerprint: &Fingerprint) -> Result<Staged, Failure> {
        match self.read_json::<JobFile>("job.json")? {
            Some(j) if j.version == VERSION && &j.fingerprint == fingerprint => Ok(j.staged),
            _ => Err(Failure::other(format!(
                "{} holds no staged rows of this input as it is now (was it changed, or the \
                 job's plan step not run on this state directory?)",
                self.dir.display()
            ))),
        }
    }

    /// Makes the directory ready for staging (empty `stage/`).
    pub fn begin_staging(&self) -> Result<(), Failure> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            Failure::other(format!(
                "cannot create state directory {}: {e}",
                self.dir.display()
            ))
        })?;
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700));
        self.fresh_dir("stage")
    }

    pub fn save_staged(&self, fingerprint: &Fingerprint, staged: &Staged) -> Result<(), Failure> {
        self.write_json(
            "job.json",
            &JobFile {
                version: VERSION,
                fingerprint: fingerprint.clone(),
                staged: staged.clone(),
            },
        )
    }

    /// The plan of an earlier attempt, if routing under it finished.
    pub fn plan(&self) -> Result<Option<Plan>, Failure> {
        self.read_json("plan.json")
    }

    /// Forgets the plan and everything run under it; empty `bucket/` and `done/`.
    pub fn clear_plan(&self) -> Result<(), Failure> {
        let _ = std::fs::remove_file(self.file("plan.json"));
        let _ = std::fs::remove_file(self.file("complete"));
        self.fresh_dir("bucket")?;
        self.fresh_dir("done")
    }

    pub fn save_plan(&self, plan: &Plan) -> Result<(), Failure> {
        self.write_json("plan.json", plan)
    }

    /// The figures of bucket `b`, if it finished.
    pub fn done(&self, b: u32) -> Result<Option<BucketFigures>, Failure> {
        self.read_json(&format!("done/{b:07}.json"))
    }

    /// Which of `buckets` buckets finished.
    pub fn done_bitmap(&self, buckets: u32) -> Result<Vec<bool>, Failure> {
        (0..buckets)
            .map(|b| Ok(self.file(&format!("done/{b:07}.json")).exists()))
            .collect()
    }

    /// Records bucket `b` as finished, with its output rows (written first: the
    /// figures file is the record that the bucket is done).
    pub fn save_done(
        &self,
        figures: &BucketFigures,
        rows: Option<&[Vec<u8>]>,
    ) -> Result<(), Failure> {
        let b = figures.bucket;
        if let Some(rows) = rows {
            let path = self.file(&format!("done/{b:07}.rows"));
            let tmp = self.file(&format!("done/{b:07}.rows.tmp"));
            let mut w = SpillWriter::create(&tmp, 1 << 20)?;
            for r in rows {
                w.write(0, r, &[])?;
            }
            w.finish()?;
            std::fs::rename(&tmp, &path)
                .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))?;
        }
        self.write_json(&format!("done/{b:07}.json"), figures)
    }

    /// The output rows of finished bucket `b`.
    pub fn rows(&self, b: u32) -> Result<SpillReader, Failure> {
        SpillReader::open(&self.file(&format!("done/{b:07}.rows")), 0)
    }

    pub fn mark_complete(&self) -> Result<(), Failure> {
        write_private(&self.file("complete"), b"")
    }

    pub fn is_complete(&self) -> bool {
        self.file("complete").exists()
    }

    /// Notes that this party has every bucket but never heard that the peer has them
    /// too (the peer went away during the last ones): the job then outlives its result
    /// ([`JobDir::release`]), so that the same command run again can serve the buckets
    /// the peer lacks when it comes back.
    pub fn mark_peer_unconfirmed(&self) -> Result<(), Failure> {
        write_private(&self.file("peer-unconfirmed"), b"")
    }

    /// Notes that a plan session showed the peer holding every bucket.
    pub fn mark_peer_confirmed(&self) -> Result<(), Failure> {
        match std::fs::remove_file(self.file("peer-unconfirmed")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Failure::other(format!(
                "cannot update {}: {e}",
                self.dir.display()
            ))),
            _ => Ok(()),
        }
    }

    pub fn peer_unconfirmed(&self) -> bool {
        self.file("peer-unconfirmed").exists()
    }

    /// Once the result is written: removes the job, unless the peer's completion is
    /// unconfirmed; then the job is kept (its staged rows and records) and its
    /// directory returned.
    pub fn release(&self) -> Option<&Path> {
        if self.peer_unconfirmed() {
            return Some(&self.dir);
        }
        self.remove();
        None
    }

    /// Removes the whole job (after its result was written). The directory is first
    /// renamed away in one step, so a party killed while the files are deleted never
    /// finds half a record on its next start.
    pub fn remove(&self) {
        let trash = self.trash();
        if std::fs::rename(&self.dir, &trash).is_ok() {
            let _ = std::fs::remove_dir_all(&trash);
        }
    }

    fn trash(&self) -> PathBuf {
        self.dir.with_extension("removing")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_record_is_a_clear_error_and_a_stale_job_is_removed() {
        let root = std::env::temp_dir().join(format!("privset-job-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let job = JobDir::new(&root, "psi", "receiver", Path::new("out.json"), "peer");
        job.begin_staging().unwrap();
        job.clear_plan().unwrap();
        let plan = Plan {
            id: hex::encode([1u8; 32]),
            key: hex::encode([2u8; 32]),
            buckets: 3,
            items: 10,
            peer_items: 20,
            padded: 5,
            secret: hex::encode([3u8; 32]),
        };
        job.save_plan(&plan).unwrap();
        assert_eq!(job.plan().unwrap(), Some(plan));
        std::fs::write(job.dir.join("plan.json"), b"{\"id\": ").unwrap();
        let err = job.plan().unwrap_err();
        assert!(
            err.message.contains("to start the job over"),
            "{}",
            err.message
        );
        // A fingerprint that does not match the staged one removes the job.
        let print = Fingerprint {
            operation: "psi".into(),
            role: "receiver".into(),
            input: "in.csv".into(),
            input_bytes: 1,
            input_modified_ns: 2,
            settings: String::new(),
        };
        assert_eq!(job.staged(&print).unwrap(), None);
        assert!(!job.dir.exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
