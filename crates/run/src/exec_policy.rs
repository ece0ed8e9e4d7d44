//! The judge's `exec:COMMAND` policy: an operator's command asked about each set. The
//! command is the operator's, but it runs once per client request, so it must never
//! outlive its answer: it runs in its own process group, and on a timeout the whole
//! group (the shell and everything it started) is killed, not just the shell. Its
//! output is read up to [`MAX_OUTPUT`]; the rest is discarded.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use privset_protocols::apsi::Policy;

/// Most output of a policy command kept (only its first line matters).
pub const MAX_OUTPUT: u64 = 64 * 1024;

/// Asks an external command: items on stdin, one per line, the client ID in
/// `$PRIVSET_CLIENT_ID`; `accept` on stdout and exit status 0 accepts, anything else
/// rejects with the first output line as the reason. Each check runs its own command,
/// so concurrent sessions check concurrently.
pub(crate) struct ExecPolicy {
    pub(crate) command: String,
    pub(crate) timeout: Duration,
}

/// A running policy command; its process group is killed when this is dropped, so no
/// path out of [`ExecPolicy::check`] leaves any of it behind.
struct Group(Child);

impl Group {
    /// Kills every process of the group still running.
    fn kill_all(&self) {
        // The child leads its own group (process_group(0)): its pid is the group's id.
        if let Ok(pgid) = libc::pid_t::try_from(self.0.id()) {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory
            // is involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_all();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Policy for ExecPolicy {
    fn check(&self, client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String> {
        if items.iter().any(|x| x.contains(&b'\n')) {
            return Err("an item contains a newline, which the exec policy cannot read".into());
        }
        let child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .env(
                "PRIVSET_CLIENT_ID",
                String::from_utf8_lossy(client_id).as_ref(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("the judge's policy command could not start: {e}"))?;
        let mut group = Group(child);
        // A timeout too large to add to now (the user's choice) means no deadline.
        let deadline = Instant::now().checked_add(self.timeout);
        let timed_out = || {
            format!(
                "the judge's policy command did not answer within {} s",
                self.timeout.as_secs()
            )
        };
        let mut stdin = group.0.stdin.take().expect("piped");
        let input: Vec<u8> = items
            .iter()
            .flat_map(|x| x.iter().copied().chain([b'\n']))
            .collect();
        // Write and read from threads: a command that answers before reading all would
        // block us, and one whose children keep the pipe open must not hold the reader.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let mut stdout = group.0.stdout.take().expect("piped");
        let (sent, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.by_ref().take(MAX_OUTPUT).read_to_end(&mut out);
            let _ = sent.send(out);
            // Drain the rest so the command is not blocked writing it.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let status = loop {
            match group.0.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if deadline.is_none_or(|d| Instant::now() < d) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => return Err(timed_out()),
            }
        };
        // The command has answered: what it left running in the background goes too,
        // which also closes the output pipe it may hold. (A process that left the
        // group keeps the pipe open at most until the deadline.)
        group.kill_all();
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let out = match left {
            Some(left) => output.recv_timeout(left).map_err(|_| timed_out())?,
            None => output.recv().unwrap_or_default(),
        };
        drop(group);
        let text = String::from_utf8_lossy(&out);
        let first = text.lines().next().unwrap_or("").trim();
        if status.success() && first == "accept" {
            Ok(())
        } else if first.is_empty() {
            Err(format!("the judge's policy rejected the set ({status})"))
        } else {
            Err(first.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(command: &str, timeout_ms: u64) -> ExecPolicy {
        ExecPolicy {
            command: command.into(),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[test]
    fn a_command_that_times_out_leaves_no_process_behind() {
        let dir = std::env::temp_dir().join(format!("privset-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pids = dir.join("pids");
        let command = format!(
            "sh -c 'sleep 300 & echo $! $$ > {}; sleep 300'",
            pids.display()
        );
        let start = Instant::now();
        let err = policy(&command, 1000)
            .check(b"c", &[b"x".to_vec()])
            .unwrap_err();
        assert!(err.contains("did not answer within"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        let pids: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(pids.len(), 2);
        // Killed processes are reaped by init: give it a moment.
        let gone = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|&p| alive(p)) && Instant::now() < gone {
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in pids {
            assert!(
                !alive(p),
                "process {p} of the policy command is still running"
            );
        }
    }

    #[test]
    fn a_background_child_holding_the_output_does_not_hold_the_answer() {
        let start = Instant::now();
        let p = policy("sleep 300 & echo accept", 10_000);
        assert_eq!(p.check(b"c", &[b"x".to_vec()]), Ok(()));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        // Huge output is bounded and the first line is the answer.
        let p = policy("echo accept; head -c 10000000 /dev/zero", 20_000);
        assert_eq!(p.check(b"c", &[b"x".to_vec()]), Ok(()));
    }
}
