//! Unit tests of the file-sink rules on real files, symlinks and FIFOs in a temporary folder
//! (devices, which need `mknod`, are tested end to end with the binary: `cli/tests/suite/file_sinks.rs`).
// `cfg(all(test, unix))` is not `cfg(test)` to clippy, whose allow-*-in-tests do not reach here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::process::Command;

use super::publish::Publisher;
use super::*;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolstream-output-file-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Read a FIFO to its end on a thread (a writer's open waits for a reader).
fn drain(fifo: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        File::open(fifo).unwrap().read_to_end(&mut all).unwrap();
        all
    })
}

#[test]
fn inspect_sees_what_is_there_and_follows_links_to_the_end() {
    let dir = scratch("inspect");
    let at = |name: &str| inspect(&dir.join(name)).unwrap();
    assert_eq!(at("none"), Target { path: dir.join("none"), kind: Kind::Absent });
    fs::write(dir.join("f"), "x").unwrap();
    assert_eq!(at("f").kind, Kind::Regular);
    fs::create_dir(dir.join("d")).unwrap();
    assert_eq!(at("d").kind, Kind::Directory);
    mkfifo(&dir.join("p"));
    assert_eq!(at("p").kind, Kind::Fifo);
    assert_eq!(inspect(Path::new("/dev/null")).unwrap().kind, Kind::CharDevice);
    // A relative link is read from its own folder; chains are followed; a dangling link names
    // the file it would create.
    fs::create_dir(dir.join("sub")).unwrap();
    symlink("../f", dir.join("sub/rel")).unwrap();
    symlink(dir.join("sub/rel"), dir.join("chain")).unwrap();
    assert_eq!(at("chain"), Target { path: dir.join("sub/../f"), kind: Kind::Regular });
    symlink("p", dir.join("to-fifo")).unwrap();
    assert_eq!(at("to-fifo").kind, Kind::Fifo);
    symlink("later", dir.join("dangling")).unwrap();
    assert_eq!(at("dangling"), Target { path: dir.join("later"), kind: Kind::Absent });
    symlink("loop2", dir.join("loop1")).unwrap();
    symlink("loop1", dir.join("loop2")).unwrap();
    assert!(inspect(&dir.join("loop1")).unwrap_err().to_string().contains("too many levels"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_stream_sink_truncates_files_writes_through_fifos_and_links_and_refuses_directories() {
    let dir = scratch("stream");
    let f = dir.join("f");
    fs::write(&f, "old content").unwrap();
    open_stream(&f).unwrap().write_all(b"new").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"new");
    // Through a link: the target is written, the link stays a link.
    symlink("f", dir.join("link")).unwrap();
    open_stream(&dir.join("link")).unwrap().write_all(b"linked").unwrap();
    assert!(fs::symlink_metadata(dir.join("link")).unwrap().file_type().is_symlink());
    assert_eq!(fs::read(&f).unwrap(), b"linked");
    // A FIFO stays a FIFO and its reader gets the bytes.
    let p = dir.join("p");
    mkfifo(&p);
    let reader = drain(&p);
    open_stream(&p).unwrap().write_all(b"through").unwrap();
    assert_eq!(reader.join().unwrap(), b"through");
    assert_eq!(inspect(&p).unwrap().kind, Kind::Fifo);
    fs::create_dir(dir.join("d")).unwrap();
    let err = open_stream(&dir.join("d")).unwrap_err().to_string();
    assert!(err.contains("is a directory") && err.contains("nothing was written"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_gets_regular_files_only() {
    let dir = scratch("sqlite");
    assert_eq!(regular_file(&dir.join("db")).unwrap(), dir.join("db"));
    fs::write(dir.join("db"), "").unwrap();
    symlink("db", dir.join("link")).unwrap();
    assert_eq!(regular_file(&dir.join("link")).unwrap(), dir.join("db"));
    mkfifo(&dir.join("p"));
    let err = regular_file(&dir.join("p")).unwrap_err().to_string();
    assert!(err.contains("is a FIFO: a SQLite database is a regular file"), "{err}");
    assert!(regular_file(Path::new("/dev/null")).unwrap_err().to_string().contains("a character device"));
    let _ = fs::remove_dir_all(&dir);
}

/// A log file holding `text`.
fn log(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("log");
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_publisher_creates_a_new_file_with_the_usual_mode_and_keeps_replacing_its_own() {
    let dir = scratch("publish-new");
    let out = dir.join("out").join("s.jsonl");
    fs::create_dir(out.parent().unwrap()).unwrap();
    let mut p = Publisher::open(&out, false).unwrap();
    p.publish(&log(&dir, "a\n"), b"tail\n").unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), "a\ntail\n");
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, crate::private_dir::default_file_mode());
    // Its own file is replaced at the next publish, without `overwrite`.
    p.publish(&log(&dir, "a\nb\n"), b"").unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), "a\nb\n");
    assert_eq!(names(out.parent().unwrap()), ["s.jsonl"], "no temporary file left");
    // Someone else's file put there since is not.
    fs::remove_file(&out).unwrap();
    fs::write(&out, "theirs").unwrap();
    let err = p.publish(&log(&dir, "c\n"), b"").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(fs::read_to_string(&out).unwrap(), "theirs");
    assert_eq!(names(out.parent().unwrap()), ["s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_existing_file_is_replaced_only_when_asked_and_keeps_its_mode() {
    let dir = scratch("publish-existing");
    let out = dir.join("s.jsonl");
    fs::write(&out, "keep").unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).unwrap();
    let err = Publisher::open(&out, false).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(fs::read_to_string(&out).unwrap(), "keep");
    let mut p = Publisher::open(&out, true).unwrap();
    p.publish(&log(&dir, "new\n"), b"").unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), "new\n");
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o640);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_symlink_is_never_replaced_its_target_is_published() {
    let dir = scratch("publish-link");
    fs::create_dir(dir.join("real")).unwrap();
    let link = dir.join("s.jsonl");
    symlink("real/target.jsonl", &link).unwrap();
    let mut p = Publisher::open(&link, false).unwrap();
    assert_eq!(p.path(), dir.join("real/target.jsonl"));
    p.publish(&log(&dir, "x\n"), b"").unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(&link).unwrap(), "x\n");
    // Its target existing, it is a file that exists (--force).
    assert_eq!(Publisher::open(&link, false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
    // A link put at the target after the publisher opened is not replaced either.
    fs::remove_file(dir.join("real/target.jsonl")).unwrap();
    symlink("/dev/null", dir.join("real/target.jsonl")).unwrap();
    let err = p.publish(&log(&dir, "y\n"), b"").unwrap_err().to_string();
    assert!(err.contains("became a symlink"), "{err}");
    assert!(fs::symlink_metadata(dir.join("real/target.jsonl")).unwrap().file_type().is_symlink());
    assert_eq!(names(&dir.join("real")), ["target.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_gets_the_log_as_it_grows_each_byte_once() {
    let dir = scratch("publish-fifo");
    let fifo = dir.join("s.jsonl");
    mkfifo(&fifo);
    let reader = drain(&fifo);
    let mut p = Publisher::open(&fifo, false).unwrap();
    let path = log(&dir, "a\n");
    p.publish(&path, b"provisional\n").unwrap();
    fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"b\n").unwrap();
    p.publish(&path, b"provisional\n").unwrap();
    drop(p);
    assert_eq!(String::from_utf8(reader.join().unwrap()).unwrap(), "a\nb\n");
    assert_eq!(inspect(&fifo).unwrap().kind, Kind::Fifo);
    assert_eq!(names(&dir), ["log", "s.jsonl"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn directories_are_refused_and_devices_written_through() {
    let dir = scratch("publish-refuse");
    assert!(Publisher::open(&dir, true).unwrap_err().to_string().contains("is a directory"));
    assert!(Publisher::open(&dir.join("missing/s.jsonl"), false)
        .unwrap_err()
        .to_string()
        .contains("no such directory"));
    let mut p = Publisher::open(Path::new("/dev/null"), false).unwrap();
    p.publish(&log(&dir, "x\n"), b"").unwrap();
    assert_eq!(inspect(Path::new("/dev/null")).unwrap().kind, Kind::CharDevice);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next() {
    let dir = scratch("publish-sweep");
    let mut child = Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let leftover = dir.join(format!(".s.jsonl.{gone}.tmp"));
    fs::write(&leftover, "half a session").unwrap();
    // Another file's temporary file, and one of a live process, are not this publisher's.
    let other = dir.join(format!(".t.jsonl.{gone}.tmp"));
    fs::write(&other, "x").unwrap();
    let live = dir.join(".s.jsonl.1.tmp");
    fs::write(&live, "x").unwrap();
    Publisher::open(&dir.join("s.jsonl"), false).unwrap();
    assert!(!leftover.exists());
    assert!(other.exists() && live.exists());
    let _ = fs::remove_dir_all(&dir);
}
