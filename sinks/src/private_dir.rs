//! The user's private directories and the temporary files toolstream keeps in them.
//!
//! - [`state_dir`]: `$XDG_STATE_HOME/toolstream`, else `~/.local/state/toolstream` (else, with no
//!   home at all, `<system temp dir>/toolstream-<uid>`); [`temp_dir`]: its `tmp` folder. Both are
//!   created mode 0700 and must be directories owned by the user; one found readable by others is
//!   made private again, one owned by someone else is refused. Every part of toolstream that keeps
//!   state or temporary files per user asks here.
//! - [`TempFile`]: a file created mode 0600 that does not outlive the process: removed when
//!   dropped, and by [`remove_temp_files`], which the binary calls on every exit path
//!   (`std::process::exit` runs no destructors: Ctrl-C, a sink left running at exit).
//! - Files a killed process left behind (`kill -9` runs nothing) are found by the pid in their
//!   name and removed once that process is gone: in [`temp_dir`] when a process first uses it, and
//!   beside a published file by [`sweep_dead`].

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The name of toolstream's folder under the state directory.
const APP: &str = "toolstream";
/// Mode of the private directories.
const DIR_MODE: u32 = 0o700;
/// Mode of a temporary file.
const FILE_MODE: u32 = 0o600;

/// The user's private state directory, created if absent, from the process environment.
pub fn state_dir() -> io::Result<PathBuf> {
    let dir = state_dir_from(|k| std::env::var_os(k))?;
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// Where the state directory is, from `env` (`XDG_STATE_HOME`, `HOME`); nothing is created.
pub fn state_dir_from(env: impl Fn(&str) -> Option<OsString>) -> io::Result<PathBuf> {
    // The XDG base directory spec: a relative path in the variable is invalid and ignored.
    if let Some(xdg) = env("XDG_STATE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Ok(xdg.join(APP));
    }
    if let Some(home) = env("HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Ok(home.join(".local").join("state").join(APP));
    }
    Ok(fallback_state_dir())
}

/// The private temporary folder, created if absent: `<state dir>/tmp`, or, when that cannot be
/// made (a read-only home), `<system temp dir>/toolstream-<uid>/tmp`. The first call of a process
/// removes what killed processes left in it.
pub fn temp_dir() -> io::Result<PathBuf> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    if let Some(dir) = DIR.get() {
        return Ok(dir.clone());
    }
    let private = |state: PathBuf| {
        let dir = state.join("tmp");
        ensure_private_dir(&dir).map(|()| dir)
    };
    let dir = state_dir().and_then(private).or_else(|e| {
        let fallback = fallback_state_dir();
        tracing::debug!("no private folder in the state directory ({e}); using {}", fallback.display());
        private(fallback)
    })?;
    sweep_dead(&dir, leading_pid);
    Ok(DIR.get_or_init(|| dir).clone())
}

/// The state directory when there is no home: `<system temp dir>/toolstream-<uid>`.
fn fallback_state_dir() -> PathBuf {
    std::env::temp_dir().join(format!("{APP}-{}", user_id()))
}

/// Create `dir` (and missing parents) mode 0700; an existing one must be a directory owned by this
/// user, and is made 0700 when others could read it.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(dir)?;
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a directory", dir.display())));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.uid() != user_id() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to another user; toolstream keeps its private files only in a folder of yours",
                    dir.display()
                ),
            ));
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))?;
        }
    }
    Ok(())
}

/// Temporary files of this process not yet removed, for [`remove_temp_files`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Makes the names of this process's temporary files distinct.
static NEXT: AtomicU64 = AtomicU64::new(0);

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remove every temporary file of this process still there. For exit paths that run no
/// destructors; harmless anywhere else a process ends.
pub fn remove_temp_files() {
    for path in live().drain(..) {
        let _ = fs::remove_file(path);
    }
}

/// A temporary file, mode 0600, removed when dropped (or at exit, see [`remove_temp_files`]).
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    /// Ownership moved on ([`TempFile::persist`]): not removed.
    kept: bool,
}

impl TempFile {
    /// A new file in the private [`temp_dir`], named `<pid>.<n>.<what>`; with the file opened for
    /// reading and writing.
    pub fn private(what: &str) -> io::Result<(TempFile, File)> {
        let dir = temp_dir()?;
        let name = format!("{}.{}.{what}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        TempFile::create(dir.join(name))
    }

    /// A new file at `path` (which must not exist; a file left there by a process with this pid
    /// that is gone is replaced). Opened for reading and writing.
    pub fn create(path: PathBuf) -> io::Result<(TempFile, File)> {
        let open = |p: &Path| {
            let mut opts = OpenOptions::new();
            opts.read(true).write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, FILE_MODE);
            opts.open(p)
        };
        let file = match open(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && !live().contains(&path) => {
                // Not ours: a process with the same pid made it and is gone (pids are reused).
                if !fs::symlink_metadata(&path)?.is_file() {
                    return Err(e);
                }
                fs::remove_file(&path)?;
                open(&path)?
            }
            other => other?,
        };
        live().push(path.clone());
        Ok((TempFile { path, kept: false }, file))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file was renamed to where it belongs: it is no longer a temporary file.
    pub fn persist(mut self) {
        self.kept = true;
        forget(&self.path);
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_file(&self.path);
            forget(&self.path);
        }
    }
}

fn forget(path: &Path) {
    live().retain(|p| p != path);
}

/// Remove the regular files in `dir` whose name `pid_of` attributes to a process that is gone.
/// Best effort: a file that cannot be read or removed is left.
pub fn sweep_dead(dir: &Path, pid_of: impl Fn(&OsStr) -> Option<u32>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = pid_of(&name) else { continue };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            tracing::debug!("removing {}, left by process {pid}, which is gone", entry.path().display());
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The pid a `<pid>.<n>.<what>` name starts with.
fn leading_pid(name: &OsStr) -> Option<u32> {
    name.to_str()?.split_once('.')?.0.parse().ok()
}

/// Whether a process with this pid exists (when unsure: yes, so its files stay).
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
        // EPERM: it exists, as someone else's.
        !matches!(rustix::process::test_kill_process(pid), Err(e) if e == rustix::io::Errno::SRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

fn user_id() -> u32 {
    #[cfg(unix)]
    {
        rustix::process::geteuid().as_raw()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// The mode a file created now gets without an explicit one (`0o666` less the umask).
pub fn default_file_mode() -> u32 {
    // Linux says it in /proc (reading it with umask(2) would change it for other threads).
    let umask = fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("Umask:"))?;
        u32::from_str_radix(line.split_whitespace().nth(1)?, 8).ok()
    });
    0o666 & !umask.unwrap_or(0o022)
}

#[cfg(all(test, unix))]
mod tests {
    // `cfg(all(test, unix))` is not `cfg(test)` to clippy, whose allow-*-in-tests do not reach here.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolstream-private-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_state_dir_follows_xdg_then_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
        };
        let at = |vars| state_dir_from(env(vars)).unwrap();
        assert_eq!(at(&[("XDG_STATE_HOME", "/x/state"), ("HOME", "/h")]), PathBuf::from("/x/state/toolstream"));
        assert_eq!(at(&[("XDG_STATE_HOME", "relative"), ("HOME", "/h")]), PathBuf::from("/h/.local/state/toolstream"));
        assert_eq!(at(&[("HOME", "/h")]), PathBuf::from("/h/.local/state/toolstream"));
        let fallback = at(&[]);
        assert!(fallback.starts_with(std::env::temp_dir()), "{}", fallback.display());
        assert!(fallback.file_name().unwrap().to_string_lossy().starts_with("toolstream-"));
    }

    #[test]
    fn private_dirs_are_0700_and_made_so() {
        let base = scratch("dirs");
        let dir = base.join("a/b/c");
        ensure_private_dir(&dir).unwrap();
        for d in [base.join("a"), base.join("a/b"), dir.clone()] {
            assert_eq!(fs::metadata(&d).unwrap().mode() & 0o777, 0o700, "{}", d.display());
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let file = base.join("f");
        fs::write(&file, "x").unwrap();
        assert!(ensure_private_dir(&file).is_err());
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn temp_files_are_0600_and_removed_on_drop_or_at_exit() {
        let base = scratch("files");
        let (a, _) = TempFile::create(base.join("a")).unwrap();
        assert_eq!(fs::metadata(a.path()).unwrap().mode() & 0o777, 0o600);
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
        // Registered for the exit paths until dropped or persisted (`remove_temp_files` itself
        // would remove the other tests' files too: the binary's Ctrl-C test covers it).
        let (b, _) = TempFile::create(base.join("b")).unwrap();
        assert!(live().contains(&b.path().to_path_buf()));
        let b_path = b.path().to_path_buf();
        drop(b);
        assert!(!live().contains(&b_path));
        let (c, _) = TempFile::create(base.join("c")).unwrap();
        let c_path = c.path().to_path_buf();
        fs::rename(&c_path, base.join("kept")).unwrap();
        c.persist();
        assert!(!live().contains(&c_path));
        assert!(base.join("kept").exists());
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn leftovers_of_gone_processes_are_swept_and_others_kept() {
        let base = scratch("sweep");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        for name in [format!("{gone}.0.spool"), format!("{me}.0.spool"), "1.0.spool".into(), "notes.txt".into()] {
            fs::write(base.join(name), "x").unwrap();
        }
        fs::create_dir(base.join(format!("{gone}.1.dir"))).unwrap();
        sweep_dead(&base, leading_pid);
        let mut left: Vec<String> =
            fs::read_dir(&base).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        // pid 1 (init) is alive; a directory is never removed; names without a pid are not ours.
        let mut want = vec![format!("{me}.0.spool"), "1.0.spool".into(), "notes.txt".into(), format!("{gone}.1.dir")];
        want.sort();
        assert_eq!(left, want);
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn a_file_left_under_this_pid_by_a_gone_process_is_replaced() {
        let base = scratch("reuse");
        let path = base.join("t");
        fs::write(&path, "old").unwrap();
        let (t, _) = TempFile::create(path.clone()).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"");
        // But one this process holds is never taken over.
        assert!(TempFile::create(path.clone()).is_err());
        drop(t);
        let _ = fs::remove_dir_all(&base);
    }
}
