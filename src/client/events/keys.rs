//! The one table of the JSON keys (and the Responses event types) the event readers act on, by
//! API. The scanner (`scan`) and the full reader (`full`) both match keys through these enums,
//! so an API's new key is one line here: the full reader's matches then fail to compile until it
//! reads the key, and the scanner hands every key of [`Top`] it does not read itself to the full
//! reader, so it can never skip over what the full reader would have counted.
//!
//! llama.cpp's `timings` object is read by the full reader alone; its keys are the fields of its
//! serde struct there.

/// Declares a set of keys: an enum with a variant a key and `Other` for the rest, [`of`] (a
/// key's bytes to its variant: one `match`, which compiles to a length test and a compare as the
/// literals written in place did) and serde's reading of a map key into it (what
/// `#[serde(field_identifier)]` would derive, through the same [`of`]).
///
/// [`of`]: Top::of
macro_rules! keys {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $key:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A key no reader acts on.
            Other,
        }

        impl $name {
            /// Every key of the set, with its name.
            #[cfg(test)]
            pub(super) const ALL: &[($name, &[u8])] = &[$(($name::$variant, $key)),*];

            /// The key's name (empty for `Other`).
            #[cfg_attr(not(test), allow(dead_code))]
            pub(super) fn name(self) -> &'static str {
                let name: &[u8] = match self {
                    $($name::$variant => $key,)*
                    $name::Other => b"",
                };
                std::str::from_utf8(name).unwrap_or_default()
            }

            /// The key named `k`.
            #[inline]
            pub(super) fn of(k: &[u8]) -> $name {
                match k {
                    $($key => $name::$variant,)*
                    _ => $name::Other,
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                struct Key;
                impl serde::de::Visitor<'_> for Key {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("field identifier")
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::of(v.as_bytes()))
                    }
                    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<$name, E> {
                        Ok($name::of(v))
                    }
                }
                d.deserialize_identifier(Key)
            }
        }
    };
}

keys! {
    /// The keys at the top level of an event or a whole body.
    Top {
        // OpenAI chat completions and completions (and every API's error).
        /// The choices; only the first is read.
        Choices = b"choices",
        /// The token counts (OpenAI's, Responses' and Anthropic's names: [`Usage`]).
        Usage = b"usage",
        /// An error the server reports.
        Error = b"error",
        // Triton generate / generate_stream.
        /// The text.
        TextOutput = b"text_output",
        /// The vLLM backend's token count.
        NumOutputTokens = b"num_output_tokens",
        /// TensorRT-LLM's tokens (their count is read).
        OutputIds = b"output_ids",
        /// TensorRT-LLM's token count.
        SequenceLength = b"sequence_length",
        // llama.cpp.
        /// The server's own timings of the request.
        Timings = b"timings",
        // OpenAI Responses and Anthropic Messages events.
        /// The event's type ([`EventType`] for Responses).
        Type = b"type",
        /// A Responses string delta or an Anthropic delta object ([`Block`]).
        Delta = b"delta",
        /// Anthropic's content block index: the tool call a delta belongs to.
        Index = b"index",
        /// Responses' output item index: the tool call a delta belongs to.
        OutputIndex = b"output_index",
        /// Responses' output item id, when a server sends no index.
        ItemId = b"item_id",
        /// Responses' lifecycle envelope (its `usage` and `error` are read).
        Response = b"response",
        /// Anthropic's `message_start` envelope, or a Responses error event's string.
        Message = b"message",
        // Whole Responses and Messages bodies.
        /// Responses' output items ([`Block`]).
        Output = b"output",
        /// Anthropic's content blocks ([`Block`]).
        Content = b"content",
    }
}

keys! {
    /// The keys of an OpenAI choice.
    Choice {
        /// A chat chunk's delta ([`Delta`]).
        Delta = b"delta",
        /// A whole chat answer's message ([`Delta`]).
        Message = b"message",
        /// A completion's text.
        Text = b"text",
    }
}

keys! {
    /// The keys of an OpenAI chat delta or message.
    Delta {
        /// Answer text.
        Content = b"content",
        /// Reasoning text (SGLang's and DeepSeek's name).
        ReasoningContent = b"reasoning_content",
        /// Reasoning text (vLLM's name).
        Reasoning = b"reasoning",
        /// Tool calls ([`ToolCall`]).
        ToolCalls = b"tool_calls",
    }
}

keys! {
    /// The keys of an OpenAI tool call.
    ToolCall {
        /// The call's index in a stream.
        Index = b"index",
        /// The function, whose [`ARGUMENTS`] are output text.
        Function = b"function",
    }
}

/// Where a tool call's argument text lies in its `function`.
pub(super) const ARGUMENTS: &[&str] = &["arguments"];

keys! {
    /// The keys of a usage object, in OpenAI's names and in Responses' and Anthropic's.
    Usage {
        /// OpenAI's input count.
        PromptTokens = b"prompt_tokens",
        /// OpenAI's output count.
        CompletionTokens = b"completion_tokens",
        /// OpenAI's sum of the two (read by no one, allowed by the scanner).
        TotalTokens = b"total_tokens",
        /// OpenAI's details of the output count (its `reasoning_tokens`).
        CompletionTokensDetails = b"completion_tokens_details",
        /// Responses' and Anthropic's input count.
        InputTokens = b"input_tokens",
        /// Responses' and Anthropic's output count.
        OutputTokens = b"output_tokens",
        /// Responses' details of the output count (its `reasoning_tokens`).
        OutputTokensDetails = b"output_tokens_details",
        /// Anthropic's cached input, counted apart from `input_tokens`.
        CacheReadInputTokens = b"cache_read_input_tokens",
        /// Anthropic's input written to the cache, counted apart from `input_tokens`.
        CacheCreationInputTokens = b"cache_creation_input_tokens",
    }
}

/// The key of an error object that holds its message.
pub(super) const ERROR_MESSAGE: &str = "message";

/// The key of a usage details object that holds the reasoning count.
pub(super) const REASONING_TOKENS: &str = "reasoning_tokens";

keys! {
    /// The types of Responses stream events that say what their string `delta` is.
    EventType {
        /// Answer text.
        OutputText = b"response.output_text.delta",
        /// Reasoning text.
        ReasoningText = b"response.reasoning_text.delta",
        /// A reasoning summary's text.
        ReasoningSummaryText = b"response.reasoning_summary_text.delta",
        /// A function call's arguments.
        FunctionCallArguments = b"response.function_call_arguments.delta",
        /// A custom tool call's input.
        CustomToolCallInput = b"response.custom_tool_call_input.delta",
        /// An MCP call's arguments.
        McpCallArguments = b"response.mcp_call_arguments.delta",
        /// Audio bytes (base64), not text.
        Audio = b"response.audio.delta",
        /// An error event (its `message` is the error).
        Error = b"error",
    }
}

keys! {
    /// The keys of an Anthropic delta object or content block and of a Responses output item.
    Block {
        /// The block's or item's type ([`ItemType`]).
        Type = b"type",
        /// Answer text.
        Text = b"text",
        /// Anthropic's reasoning text.
        Thinking = b"thinking",
        /// A piece of an Anthropic tool call's input JSON (in a delta).
        PartialJson = b"partial_json",
        /// An Anthropic tool call's whole input (a JSON value).
        Input = b"input",
        /// A Responses item's content parts (their `text`).
        Content = b"content",
        /// A Responses reasoning item's summary parts (their `text`).
        Summary = b"summary",
        /// A Responses function call's arguments.
        Arguments = b"arguments",
    }
}

/// Where a Responses content part's text lies.
pub(super) const PART_TEXT: &[&str] = &["text"];

keys! {
    /// The types of Responses output items that change what their text is.
    ItemType {
        /// All of the item's text is reasoning.
        Reasoning = b"reasoning",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key reads back as itself, by bytes and through serde; another name is `Other`.
    #[test]
    fn every_key_reads_back() {
        fn check<K>(all: &[(K, &[u8])], of: fn(&[u8]) -> K, name: fn(K) -> &'static str)
        where
            K: Copy + PartialEq + std::fmt::Debug + serde::de::DeserializeOwned,
        {
            for &(k, name_bytes) in all {
                assert_eq!(of(name_bytes), k);
                assert_eq!(name(k).as_bytes(), name_bytes);
                let json = format!("\"{}\"", name(k));
                assert_eq!(serde_json::from_str::<K>(&json).unwrap(), k);
            }
            assert_ne!(of(b"no such key"), all[0].0);
        }
        check(Top::ALL, Top::of, Top::name);
        check(Choice::ALL, Choice::of, Choice::name);
        check(Delta::ALL, Delta::of, Delta::name);
        check(ToolCall::ALL, ToolCall::of, ToolCall::name);
        check(Usage::ALL, Usage::of, Usage::name);
        check(EventType::ALL, EventType::of, EventType::name);
        check(Block::ALL, Block::of, Block::name);
        check(ItemType::ALL, ItemType::of, ItemType::name);
        assert_eq!(Top::of(b"id"), Top::Other);
        // Escapes in a key are read as the key they spell.
        assert_eq!(
            serde_json::from_str::<Top>(r#""cho\u0069ces""#).unwrap(),
            Top::Choices
        );
    }
}
