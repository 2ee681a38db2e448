//! The reference part of the user guide (`docs/src/reference/`) checked against the code, so that it cannot
//! drift: scenario and error-model fields with their defaults, the experiment file's keys, the CLI's help,
//! and the results columns. Each check fails when the code gains, loses or renames something the pages do
//! not say (or the other way round).

mod cli;
mod experiment_file;
mod markdown;
mod results;
mod scenario;
