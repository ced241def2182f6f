//! What the newer APIs add to a plan, resolved and checked against the endpoint type: batches
//! of texts (`--batch-size-text`, embeddings and rankings), images and tools (chat-like types),
//! the reranker layout (`--rankings-api`, or GenAI-Perf's `--extra-inputs rankings:tei`).
//! Every refusal names the flag and what to give instead.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{UsageError, usage};
use crate::target::{Api, RankingsLayout, Target, rankings_endpoint};
use crate::workload::images::{self, ImageFormat, ImagePlan, ImageSource};
use crate::workload::tools::{self, ToolsPlan};
use crate::workload::{PromptSource, WorkloadPlan};

/// The newer APIs' flags as given.
#[derive(Debug, Clone, Default)]
pub struct ApiSpec {
    /// `--batch-size-text`.
    pub batch_size_text: Option<u32>,
    /// `--batch-size-image`.
    pub batch_size_image: Option<u32>,
    /// `--image-width-mean`, `--image-width-stddev`.
    pub image_width: (Option<u32>, Option<u32>),
    /// `--image-height-mean`, `--image-height-stddev`.
    pub image_height: (Option<u32>, Option<u32>),
    /// `--image-format`.
    pub image_format: Option<ImageFormat>,
    /// `--image-dir`.
    pub image_dir: Option<PathBuf>,
    /// `--tools`.
    pub tools: Option<PathBuf>,
    /// `--tool-choice`.
    pub tool_choice: Option<String>,
    /// `--rankings-api`.
    pub rankings_api: Option<RankingsLayout>,
    /// `--endpoint` was given (else a rankings layout picks its own path).
    pub endpoint_given: bool,
}

/// Fills the target's reranker layout and the workload's batch size, images and tools from
/// `s`, refusing what the endpoint type cannot send.
pub fn resolve(s: &ApiSpec, t: &mut Target, w: &mut WorkloadPlan) -> Result<(), UsageError> {
    batch(s, t.api, t.streaming, w)?;
    rankings(s, t, w)?;
    w.images = images(s, t.api, w)?;
    w.tools = tools(s, t.api)?;
    Ok(())
}

/// `--batch-size-text` and what embeddings and rankings cannot do.
fn batch(s: &ApiSpec, api: Api, streaming: bool, w: &mut WorkloadPlan) -> Result<(), UsageError> {
    let name = api.name();
    if api.generates() {
        if s.batch_size_text.is_some() {
            return usage(format!(
                "--batch-size-text sets the texts of an embeddings request or the passages of a rankings request; --endpoint-type {name} sends one prompt per request: drop it"
            ));
        }
        return Ok(());
    }
    if streaming {
        return usage(format!(
            "--endpoint-type {name} answers each request once, with {}: there is no stream to time; drop --streaming",
            if api == Api::Embeddings {
                "one vector per input"
            } else {
                "one score per passage"
            }
        ));
    }
    if w.output.is_some() {
        return usage(format!(
            "--output-tokens-mean asks for generated tokens; --endpoint-type {name} generates none: drop it"
        ));
    }
    if w.sessions.is_some() {
        return usage(format!(
            "multi-turn sessions need a generative endpoint type, not {name}: drop the session flags"
        ));
    }
    if matches!(w.prompts, PromptSource::Trace(_)) {
        return usage(format!(
            "--input-file holds a request trace (input_length, output_length rows), which --endpoint-type {name} cannot replay: give {{\"text\": ...}} rows"
        ));
    }
    w.batch_size_text = match s.batch_size_text {
        Some(0) => return usage("--batch-size-text must be at least 1"),
        Some(b) => b,
        None => 1,
    };
    Ok(())
}

/// The reranker layout (and its path, unless `--endpoint` names one), and the input that only
/// rankings reads.
fn rankings(s: &ApiSpec, t: &mut Target, w: &mut WorkloadPlan) -> Result<(), UsageError> {
    // GenAI-Perf picks TEI's layout with `--extra-inputs rankings:tei`; the field is not sent.
    let tei_asked = w
        .extra_inputs
        .iter()
        .any(|(k, v)| k == "rankings" && v == "tei");
    if t.api != Api::Rankings {
        if s.rankings_api.is_some() {
            return usage(format!(
                "--rankings-api lays out reranker requests; --endpoint-type {} sends none: drop it, or give --endpoint-type rankings",
                t.api.name()
            ));
        }
        if matches!(w.prompts, PromptSource::Rankings(_)) {
            return usage(format!(
                "--input-file holds reranker queries and passages, which only --endpoint-type rankings sends (this run is --endpoint-type {})",
                t.api.name()
            ));
        }
        return Ok(());
    }
    w.extra_inputs
        .retain(|(k, v)| !(k == "rankings" && v == "tei"));
    t.rankings = match (s.rankings_api, tei_asked) {
        (Some(l), true) if l != RankingsLayout::Tei => {
            return usage(format!(
                "--rankings-api {} and --extra-inputs rankings:tei ask for two layouts: give one",
                l.name()
            ));
        }
        (Some(l), _) => l,
        (None, true) => RankingsLayout::Tei,
        (None, false) => RankingsLayout::Rerank,
    };
    if !s.endpoint_given {
        t.endpoint = rankings_endpoint(t.rankings).to_string();
    }
    Ok(())
}

/// The images of chat-like prompts: synthetic or a directory's.
fn images(s: &ApiSpec, api: Api, w: &WorkloadPlan) -> Result<Option<ImagePlan>, UsageError> {
    let synthetic = s.image_width.0.filter(|&m| m > 0);
    let source = match (synthetic, &s.image_dir) {
        (Some(_), Some(_)) => {
            return usage(
                "--image-width-mean draws synthetic images and --image-dir reads files: give one",
            );
        }
        (None, None) => {
            let stray = [
                ("--image-width-stddev", s.image_width.1.is_some()),
                ("--image-height-mean", s.image_height.0.is_some()),
                ("--image-height-stddev", s.image_height.1.is_some()),
                ("--image-format", s.image_format.is_some()),
                ("--batch-size-image", s.batch_size_image.is_some()),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
                return usage(format!(
                    "{flag} shapes the images sent with each prompt, and none are sent: give --image-width-mean N (synthetic images) or --image-dir DIR"
                ));
            }
            return Ok(None);
        }
        (Some(width), None) => ImageSource::Synthetic {
            width: (width, s.image_width.1.unwrap_or(0)),
            height: (
                s.image_height.0.filter(|&h| h > 0).unwrap_or(width),
                s.image_height.1.unwrap_or(0),
            ),
            format: s.image_format,
        },
        (None, Some(dir)) => dir_source(dir, s)?,
    };
    if !api.chat_like() {
        return usage(format!(
            "images are sent with chat, responses or messages prompts; --endpoint-type {} takes none: drop the image flags",
            api.name()
        ));
    }
    if w.sessions.is_some() {
        return usage(
            "images are sent with single prompts, not with multi-turn sessions: drop the image flags or the session flags",
        );
    }
    if let ImageSource::Synthetic { width, height, .. } = &source
        && width.0.max(height.0) > images::MAX_SIDE
    {
        return usage(format!(
            "--image-width-mean / --image-height-mean: at most {} pixels",
            images::MAX_SIDE
        ));
    }
    Ok(Some(ImagePlan {
        source,
        per_request: match s.batch_size_image {
            Some(0) => return usage("--batch-size-image must be at least 1"),
            Some(n) => n,
            None => 1,
        },
    }))
}

/// `--image-dir`: its image files, at least one, each readable.
fn dir_source(dir: &std::path::Path, s: &ApiSpec) -> Result<ImageSource, UsageError> {
    if let Some(flag) = [
        ("--image-height-mean", s.image_height.0.is_some()),
        ("--image-format", s.image_format.is_some()),
    ]
    .iter()
    .find_map(|(f, given)| given.then_some(*f))
    {
        return usage(format!(
            "{flag} shapes synthetic images; --image-dir sends its files as they are: drop {flag}"
        ));
    }
    let files = images::image_files(dir)
        .map_err(|e| UsageError(format!("--image-dir {}: {e}", dir.display())))?;
    if files.is_empty() {
        return usage(format!(
            "--image-dir {} holds no .png, .jpg or .jpeg file: put the images to send there, or drop --image-dir and give --image-width-mean N for synthetic ones",
            dir.display()
        ));
    }
    for f in &files {
        images::read_image(f).map_err(|e| UsageError(format!("--image-dir: {e}")))?;
    }
    Ok(ImageSource::Dir {
        path: dir.to_path_buf(),
        files,
    })
}

/// `--tools` and `--tool-choice`.
fn tools(s: &ApiSpec, api: Api) -> Result<Option<ToolsPlan>, UsageError> {
    let Some(path) = &s.tools else {
        if s.tool_choice.is_some() {
            return usage(
                "--tool-choice says which of the --tools the model calls: give --tools FILE too",
            );
        }
        return Ok(None);
    };
    if !api.chat_like() {
        return usage(format!(
            "tools are sent with chat, responses or messages requests; --endpoint-type {} takes none: drop --tools",
            api.name()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("--tools {}: {e}", path.display())))?;
    let defs = tools::parse_tools(&text).map_err(|e| {
        UsageError(format!(
            "--tools {}: not a list of tool definitions: {e}; expected {}",
            path.display(),
            tools::TOOLS_FORM
        ))
    })?;
    let choice = tools::parse_choice(s.tool_choice.as_deref(), &defs)
        .map_err(|e| UsageError(format!("--tool-choice {e}")))?;
    Ok(Some(ToolsPlan {
        path: path.clone(),
        tools: Arc::new(defs),
        choice,
    }))
}
