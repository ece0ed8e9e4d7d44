//! n-party sessions over one exchange directory: a file sequence per ordered pair, a
//! lock per participant, and resume by replay.

mod common;

use std::path::Path;
use std::thread;
use std::time::Duration;

use common::temp_dir;
use privset_net::dir::{self, DirOptions};
use privset_net::{RunError, TransportError, drive_links};
use privset_protocols::party::PartyId;
use privset_protocols::toy::{self, Form, ToySumConfig};

fn opts() -> DirOptions {
    DirOptions {
        poll_interval: Duration::from_millis(5),
        timeout: Duration::from_secs(20),
        ..DirOptions::default()
    }
}

fn peers(n: usize, form: Form, me: PartyId) -> Vec<PartyId> {
    (0..n as PartyId)
        .filter(|&p| p != me && (form == Form::Mesh || p == toy::HUB || me == toy::HUB))
        .collect()
}

/// Participant `me` of the toy sum over `dir`, from a seed derived from `seed`.
fn participant(dir: &Path, n: usize, form: Form, me: PartyId, seed: u8) -> Result<u128, RunError> {
    let mut links = dir::open_links(dir, me, &peers(n, form, me), opts())?;
    let config = ToySumConfig {
        parties: n,
        me,
        form,
        value: 10 * u64::from(me) + 1,
    };
    let mut party = toy::new_party(config, [seed.wrapping_add(me); 32])?;
    drive_links(&mut party, &mut links, &mut |_| {})?;
    Ok(party.into_output().expect("finished"))
}

fn session(dir: &Path, n: usize, form: Form) -> Vec<u128> {
    let handles: Vec<_> = (0..n as PartyId)
        .map(|me| {
            let dir = dir.to_path_buf();
            thread::spawn(move || participant(&dir, n, form, me, 1).unwrap())
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn expected(n: usize) -> u128 {
    (0..n as u128).map(|i| 10 * i + 1).sum()
}

#[test]
fn star_and_mesh_over_one_directory() {
    for form in [Form::Star, Form::Mesh] {
        let dir = temp_dir("dir-nparty");
        assert_eq!(session(&dir, 5, form), vec![expected(5); 5], "{form:?}");
        // A file sequence per ordered pair that talks, and none between spokes.
        assert!(dir.join("0000-p1-to-p0.msg").exists());
        assert!(dir.join("0001-p0-to-p4.msg").exists());
        assert_eq!(dir.join("0000-p1-to-p2.msg").exists(), form == Form::Mesh);
        // Every lock was released.
        let locks = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("lock".as_ref()))
            .count();
        assert_eq!(locks, 0);
    }
}

#[test]
fn a_participant_recreated_from_its_seed_replays_identical_files() {
    let dir = temp_dir("dir-nparty-resume");
    assert_eq!(session(&dir, 4, Form::Mesh), vec![expected(4); 4]);
    let files = std::fs::read_dir(&dir).unwrap().count();
    // Every peer's files are there: the restarted participant replays to the end.
    assert_eq!(participant(&dir, 4, Form::Mesh, 2, 1).unwrap(), expected(4));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), files);
    // Another seed writes another hello: refused, not overwritten.
    let err = participant(&dir, 4, Form::Mesh, 2, 99).unwrap_err();
    assert!(
        matches!(err.transport(), Some(TransportError::ExchangeDir(why)) if why.contains("different message")),
        "{err}"
    );
}

#[test]
fn one_process_per_participant() {
    let dir = temp_dir("dir-nparty-lock");
    let _held = dir::open_links(&dir, 1, &[0, 2], opts()).unwrap();
    let err = dir::open_links(&dir, 1, &[0], opts()).err().unwrap();
    assert!(
        matches!(&err, TransportError::ExchangeDir(why) if why.contains("\"p1\" is already in use")),
        "{err}"
    );
    // Another participant is free to open.
    assert!(dir::open_links(&dir, 2, &[1], opts()).is_ok());
    assert!(dir::open_links(&dir, 3, &[3], opts()).is_err());
}
