//! n-party sessions over one exchange directory: a file sequence per ordered pair, a
//! lock per participant, and resume by replay.

mod common;

use std::path::Path;
use std::thread;
use std::time::Duration;

use common::temp_dir;
use privset_net::dir::DirOptions;
use privset_net::sealed_dir::open_links;
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
    let link_seed = [seed.wrapping_add(me) ^ 0x5a; 32];
    let mut links = open_links(dir, me, &peers(n, form, me), &link_seed, opts())?;
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
    // Another seed publishes another link key: refused, not overwritten.
    let err = participant(&dir, 4, Form::Mesh, 2, 99).unwrap_err();
    assert!(
        matches!(err.transport(), Some(TransportError::ExchangeDir(why)) if why.contains("another run's link key")),
        "{err}"
    );
}

/// Every message file in `dir`.
fn message_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some("msg".as_ref()))
        .collect()
}

#[test]
fn message_files_are_sealed_for_their_one_recipient() {
    let dir = temp_dir("dir-nparty-sealed");
    assert_eq!(session(&dir, 3, Form::Mesh), vec![expected(3); 3]);
    // No file holds a privset frame in the clear (every frame starts with "PSET").
    let files = message_files(&dir);
    assert!(!files.is_empty());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !bytes
                .windows(4)
                .any(|w| w == privset_protocols::wire::MAGIC),
            "{} holds a plaintext frame",
            f.display()
        );
    }
    // p2 handed p0's message to p1 (as a participant reading the folder would try):
    // it does not open with p2's keys.
    let stolen = std::fs::read(dir.join("0000-p0-to-p1.msg")).unwrap();
    let own = std::fs::read(dir.join("0000-p0-to-p2.msg")).unwrap();
    std::fs::write(dir.join("0000-p0-to-p2.msg"), &stolen).unwrap();
    let err = participant(&dir, 3, Form::Mesh, 2, 1).unwrap_err();
    assert!(
        matches!(err.transport(), Some(TransportError::ExchangeDir(why)) if why.contains("does not open")),
        "{err}"
    );
    std::fs::write(dir.join("0000-p0-to-p2.msg"), &own).unwrap();
    // One byte flipped in a file is refused too.
    let path = dir.join("0000-p1-to-p0.msg");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = participant(&dir, 3, Form::Mesh, 0, 1).unwrap_err();
    assert!(
        matches!(err.transport(), Some(TransportError::ExchangeDir(why)) if why.contains("does not open")),
        "{err}"
    );
}

#[test]
fn one_process_per_participant() {
    let dir = temp_dir("dir-nparty-lock");
    let seed = [7; 32];
    let _held = open_links(&dir, 1, &[0, 2], &seed, opts()).unwrap();
    let err = open_links(&dir, 1, &[0], &seed, opts()).err().unwrap();
    assert!(
        matches!(&err, TransportError::ExchangeDir(why) if why.contains("\"p1\" is already in use")),
        "{err}"
    );
    // Another participant is free to open.
    assert!(open_links(&dir, 2, &[1], &seed, opts()).is_ok());
    assert!(open_links(&dir, 3, &[3], &seed, opts()).is_err());
}
