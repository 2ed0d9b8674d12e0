//! `gpulab bench …` (part of the binary, not the library): one subcommand per
//! registered experiment, built from the registry at run time — each parameter becomes
//! a `--flag` with the experiment's default, its doc comment as help, and its choices
//! where it has some — plus `bench all`. `--json` prints the result with provenance
//! instead of a table.

use std::process::ExitCode;

use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches, Subcommand};
use gpulab::engine::backend::Backend;
use gpulab::engine::bench;
use gpulab::experiments::{DynExperiment, REGISTRY, Rule, find};
use serde_json::{Map, Value};

/// What `gpulab bench` was asked.
pub(crate) enum BenchCommand {
    /// Every experiment at its defaults.
    All {
        /// One JSON document instead of tables.
        json: bool,
    },
    /// One experiment.
    One {
        /// Its registry entry.
        experiment: &'static dyn DynExperiment,
        /// The flags given, as JSON values.
        overrides: Map<String, Value>,
        /// JSON instead of a table.
        json: bool,
    },
}

fn flag(field: &str) -> String {
    field.replace('_', "-")
}

fn json_flag() -> Arg {
    Arg::new("json")
        .long("json")
        .action(ArgAction::SetTrue)
        .help("Print the result as JSON, with provenance, instead of a table")
}

/// The parameters' doc comments, from the OpenAPI schema derived from the type.
fn descriptions(experiment: &dyn DynExperiment) -> Map<String, Value> {
    experiment
        .schemas()
        .first()
        .and_then(|(_, schema)| serde_json::to_value(schema).ok())
        .and_then(|schema| schema.get("properties").and_then(Value::as_object).cloned())
        .unwrap_or_default()
}

fn experiment_command(experiment: &'static dyn DynExperiment) -> Command {
    let described = descriptions(experiment);
    let rules = experiment.rules(&bench::local_limits());
    let mut command = Command::new(experiment.name())
        .about(experiment.summary())
        .arg(json_flag());
    if let Value::Object(defaults) = experiment.defaults() {
        for (field, default) in defaults {
            let default = match &default {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let help = described
                .get(&field)
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut arg = Arg::new(field.clone())
                .long(flag(&field))
                .value_name(field.to_uppercase())
                .default_value(default)
                .help(help);
            if let Some(Rule::OneOf { choices, .. }) = rules.iter().find(|r| r.field() == field) {
                arg = arg.value_parser(clap::builder::PossibleValuesParser::new(choices.iter()));
            }
            command = command.arg(arg);
        }
    }
    command
}

/// A flag's text as JSON: a whole number, a number, `true`/`false`, or a string.
fn value(text: &str) -> Value {
    if let Ok(flag) = text.parse::<bool>() {
        return Value::Bool(flag);
    }
    text.parse::<u64>()
        .map(Value::from)
        .or_else(|_| text.parse::<f64>().map(Value::from))
        .unwrap_or_else(|_| Value::String(text.to_string()))
}

impl FromArgMatches for BenchCommand {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let json = sub.get_flag("json");
        if name == "all" {
            return Ok(Self::All { json });
        }
        let experiment = find(name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        let mut overrides = Map::new();
        if let Value::Object(defaults) = experiment.defaults() {
            for field in defaults.keys() {
                if let Some(text) = sub.get_one::<String>(field) {
                    overrides.insert(field.clone(), value(text));
                }
            }
        }
        Ok(Self::One {
            experiment,
            overrides,
            json,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for BenchCommand {
    fn augment_subcommands(command: Command) -> Command {
        let all = Command::new("all")
            .about(
                "Every experiment at its default size; with --json, one document with provenance",
            )
            .arg(json_flag());
        REGISTRY
            .iter()
            .fold(command.subcommand(all), |c, e| {
                c.subcommand(experiment_command(*e))
            })
            .subcommand_required(true)
    }

    fn augment_subcommands_for_update(command: Command) -> Command {
        Self::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        name == "all" || find(name).is_some()
    }
}

impl BenchCommand {
    /// Runs the command and prints its output.
    pub(crate) fn run(self) -> ExitCode {
        match self {
            Self::All { json: true } => {
                let document = bench::run_all(|name| eprintln!("running {name} …"));
                match serde_json::to_string_pretty(&document) {
                    Ok(text) => println!("{text}"),
                    Err(e) => {
                        eprintln!("gpulab: {e}");
                        return ExitCode::FAILURE;
                    }
                }
                let failed = document["experiments"]
                    .as_array()
                    .is_none_or(|all| all.iter().any(|e| e.get("error").is_some()));
                if failed {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                }
            }
            Self::All { json: false } => {
                let (mut backend, card, _) = Backend::open();
                let mut all_ran = true;
                for experiment in REGISTRY {
                    println!("== {} ({})", experiment.name(), experiment.summary());
                    all_ran &= print_one(&mut backend, &card, *experiment, &Map::new(), false)
                        == ExitCode::SUCCESS;
                }
                if all_ran {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Self::One {
                experiment,
                overrides,
                json,
            } => {
                let (mut backend, card, _) = Backend::open();
                print_one(&mut backend, &card, experiment, &overrides, json)
            }
        }
    }
}

fn print_one(
    backend: &mut Backend,
    card: &gpulab::gpu::DeviceCard,
    experiment: &dyn DynExperiment,
    overrides: &Map<String, Value>,
    json: bool,
) -> ExitCode {
    if !card.kind.is_cuda() && !json {
        eprintln!("{}", card.note);
    }
    match bench::run_one(backend, card, experiment, overrides) {
        Ok(ran) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&ran.outcome).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(ran) => {
            println!(
                "on {} ({})",
                ran.outcome.provenance.device, ran.outcome.provenance.backend
            );
            print!("{}", ran.table);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpulab: {e}");
            ExitCode::FAILURE
        }
    }
}
