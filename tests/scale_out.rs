//! The batch-scheduler recipes of docs/scale-out.md without a cluster: the Kubernetes Indexed Job
//! manifest checked against a pinned schema (tests/data/k8s-indexed-job.schema.json), and the
//! Slurm array script's and the Job's command lines run locally with the schedulers' variables
//! set, merged, and compared with the single run.

mod cli_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON Schema keywords the pinned schema uses (type, const, enum, required, properties,
/// items, minItems, minimum, minLength, maxLength); every violation, with its JSON path.
fn validate(value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => false,
        };
        if !ok {
            errors.push(format!("{path}: expected {t}, got {value}"));
            return;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            errors.push(format!("{path}: expected {c}, got {value}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            errors.push(format!("{path}: {value} not one of {e:?}"));
        }
    }
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        if value.as_f64().is_some_and(|v| v < min) {
            errors.push(format!("{path}: {value} < {min}"));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as u64;
        if schema
            .get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| len < m)
        {
            errors.push(format!("{path}: too short"));
        }
        if schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| len > m)
        {
            errors.push(format!("{path}: too long"));
        }
    }
    if let Some(object) = value.as_object() {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = name.as_str().unwrap_or_default();
            if !object.contains_key(name) {
                errors.push(format!("{path}: missing required {name}"));
            }
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                if let Some(v) = object.get(name) {
                    validate(v, sub, &format!("{path}.{name}"), errors);
                }
            }
        }
    }
    if let Some(items) = value.as_array() {
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| (items.len() as u64) < m)
        {
            errors.push(format!("{path}: fewer than minItems"));
        }
        if let Some(sub) = schema.get("items") {
            for (i, v) in items.iter().enumerate() {
                validate(v, sub, &format!("{path}[{i}]"), errors);
            }
        }
    }
}

fn schema_errors(manifest: &Value) -> Vec<String> {
    let schema = read_json(&repo().join("tests/data/k8s-indexed-job.schema.json"));
    let mut errors = Vec::new();
    validate(manifest, &schema, "$", &mut errors);
    errors
}

fn job() -> Value {
    read_json(&repo().join("scripts/scale-out/indexed-job.json"))
}

fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

#[test]
fn the_indexed_job_manifest_fits_the_schema_and_the_shard_count() {
    let job = job();
    let errors = schema_errors(&job);
    assert!(errors.is_empty(), "indexed-job.json: {errors:#?}");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"][0].as_str().unwrap();
    assert!(
        args.contains("--shard \"$JOB_COMPLETION_INDEX/$SHARD_COUNT\""),
        "{args}"
    );
    assert_eq!(
        env_value(container, "SHARD_COUNT"),
        Some(job["spec"]["completions"].to_string().as_str()),
        "SHARD_COUNT must equal spec.completions"
    );
    // The check can fail: a Job that is not Indexed, or has no image, is refused.
    let mut bad = job.clone();
    bad["spec"]["completionMode"] = "NonIndexed".into();
    bad["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Always".into();
    let errors = schema_errors(&bad);
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

fn rmld_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rmld")
}

const ARGS: &str = "encode --count 30 --iterations 20 --seed 4 --backend cpu";

/// The single run and the merged folder hold the same files (report.json but for seconds).
fn assert_same(single: &Path, merged: &Path) {
    for name in [
        "codes.npy",
        "reconstructions.npy",
        "dictionary.npy",
        "reconstructions.png",
    ] {
        assert!(
            std::fs::read(single.join(name)).unwrap() == std::fs::read(merged.join(name)).unwrap(),
            "{name} differs"
        );
    }
    let strip = |dir: &Path| {
        let mut v = cli_common::json(dir, "report.json");
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    assert_eq!(strip(single), strip(merged));
}

fn single_run(dir: &Path) -> PathBuf {
    let single = dir.join("single");
    let mut args: Vec<&str> = ARGS.split(' ').collect();
    let out = single.to_str().unwrap();
    args.extend(["--out", out]);
    let run = cli_common::rmld(&args);
    assert!(run.status.success(), "{}", cli_common::stderr(&run));
    single
}

#[test]
fn the_slurm_array_script_runs_locally_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let script = repo().join("scripts/scale-out");
    for task in 0..3 {
        let out = Command::new("bash")
            .arg(script.join("slurm.sh"))
            .env("RMLD", rmld_bin())
            .env("RMLD_ARGS", ARGS)
            .env("RUN_DIR", &run_dir)
            .env("SLURM_ARRAY_TASK_ID", task.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", "3")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "task {task}: {}",
            cli_common::stderr(&out)
        );
    }
    let out = Command::new("bash")
        .arg(script.join("slurm-merge.sh"))
        .env("RMLD", rmld_bin())
        .env("RUN_DIR", &run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "merge: {}", cli_common::stderr(&out));
    assert_same(&single_run(dir.path()), &run_dir.join("merged"));
    // Outside an array the script refuses to guess its shard.
    let out = Command::new("bash")
        .arg(script.join("slurm.sh"))
        .env("RMLD", rmld_bin())
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env("RUN_DIR", &run_dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(cli_common::stderr(&out).contains("SLURM_ARRAY_TASK_ID"));
}

#[test]
fn the_indexed_jobs_command_runs_locally_and_merges() {
    let job = job();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<&str> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let script = container["args"][0].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    // `rmld` from PATH, as in the image.
    let bin_dir = Path::new(rmld_bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let count = 3;
    for index in 0..count {
        let out = Command::new(command[0])
            .args(&command[1..])
            .arg(script)
            .env("PATH", &path)
            .env("RMLD_ARGS", ARGS)
            .env("RUN_DIR", &run_dir)
            .env("SHARD_COUNT", count.to_string())
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "index {index}: {}",
            cli_common::stderr(&out)
        );
    }
    let merged = run_dir.join("merged");
    let mut args = vec!["merge".to_string(), merged.display().to_string()];
    args.extend((0..count).map(|i| run_dir.join(format!("shard-{i}")).display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cli_common::rmld(&args);
    assert!(run.status.success(), "{}", cli_common::stderr(&run));
    assert_same(&single_run(dir.path()), &merged);
}
