//! How toolstream ends its process: [`exit`], the one way it exits.

/// End the process with `code`. The one way toolstream exits: `std::process::exit` runs no
/// destructors, so the private temporary files still there (a pi session's spool when Ctrl-C
/// ends a replay, a sink left running at exit) are removed first.
pub fn exit(code: i32) -> ! {
    toolstream_sinks::private_dir::remove_temp_files();
    std::process::exit(code)
}
