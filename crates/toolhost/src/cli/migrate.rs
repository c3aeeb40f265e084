//! `toolhost migrate --from DIR --to postgres://…`: a data folder's threads, tokens and
//! credentials copied into an empty PostgreSQL database and checked thread by thread, so that a
//! user can move up from one machine without losing history.

use super::data::{is_postgres, shown};
use super::output::{self, errln, outln, BAD_INPUT, INVALID};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_store::copy::{copy_sqlite_to_postgres, CopyProgress};
use toolhost_store::secrets::{SECRET_KEY_ENV, SECRET_KEY_FILE};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The data folder to copy (its toolhost.db): only read, once its schema is brought up to
    /// date.
    #[arg(long)]
    from: PathBuf,
    /// The PostgreSQL database to copy into (`postgres://user:password@host/db`); it must hold
    /// no threads, tokens or credentials yet.
    #[arg(long)]
    to: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn migrate(args: MigrateArgs) -> ExitCode {
    if !is_postgres(&args.to) {
        output::error(
            // Not echoed: what was given may hold a password.
            "--to is not a PostgreSQL URL.",
            Some(&"give postgres://user:password@host/database"),
        );
        return output::exit(BAD_INPUT);
    }
    let db = args.from.join("toolhost.db");
    let url = args.to.to_str().unwrap_or_default();
    let json = args.json;
    let mut progress = |step: CopyProgress| {
        if json {
            return;
        }
        match step {
            CopyProgress::Table { name, rows } => errln!("copied {rows} rows of {name}"),
            CopyProgress::Checked { done, of } if done == of || done % 100 == 0 => {
                errln!("checked {done} of {of} threads")
            }
            CopyProgress::Checked { .. } => {}
        }
    };
    let report = match copy_sqlite_to_postgres(&db, url, &mut progress) {
        Ok(report) => report,
        Err(e) => {
            output::error(
                &format!(
                    "{} could not be copied to {}.",
                    args.from.display(),
                    shown(&args.to)
                ),
                Some(&e),
            );
            return output::exit(INVALID);
        }
    };
    let key = args.from.join(SECRET_KEY_FILE);
    if json {
        output::json(&json!({
            "from": args.from.display().to_string(),
            "to": shown(&args.to),
            "tables": report.tables.iter().map(|(name, rows)| json!({"table": name, "rows": rows})).collect::<Vec<_>>(),
            "threads": report.threads.iter().map(|t| json!({
                "id": t.thread,
                "messages": t.messages,
                "calls": t.calls,
                "events": t.events,
                "files": t.files,
                "other": t.other,
                "hash": format!("{:016x}", t.hash),
            })).collect::<Vec<_>>(),
            "secret_key_file": key.is_file().then(|| key.display().to_string()),
        }));
    } else {
        outln!(
            "copied {} threads from {} to {}; each read back the same from both",
            report.threads.len(),
            args.from.display(),
            shown(&args.to)
        );
        if key.is_file() {
            outln!(
                "secrets were sealed with the key in {}: give every node its contents as {SECRET_KEY_ENV}",
                key.display()
            );
        }
    }
    ExitCode::SUCCESS
}
