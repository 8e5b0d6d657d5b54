//! What servers say about their models: the context window each really
//! processes and what each can do (tools, thinking, vision), read from
//! every server's own answer (pure functions; `models.rs` fetches them).
//!
//! | server | window | capabilities |
//! |---|---|---|
//! | Ollama | `/api/show` `model_info.<arch>.context_length` (trained), `/api/ps` `context_length` (loaded): the proxy sets `num_ctx` itself (`ollama.rs`), so the window is the trained length capped by [`Facts::window_for_ollama`] | `/api/show` `capabilities` |
//! | llama.cpp | `/props` `default_generation_settings.n_ctx` (per slot) | `/props` `modalities.vision` |
//! | LM Studio | `/api/v0/models` `loaded_context_length` (a model not loaded yet: unknown) | `type` `vlm`, `capabilities` `tool_use` |
//! | vLLM | `/v1/models` `max_model_len` | — |
//! | hosted lists | `/models` `context_length` (OpenRouter, Together), `context_window` (Groq), `max_context_length` (Mistral) | OpenRouter `supported_parameters`, `architecture.input_modalities`; Mistral `capabilities` |

use serde::Serialize;
use serde_json::Value;

/// What a model can do, where its server says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Capabilities {
    pub tools: bool,
    pub thinking: bool,
    pub vision: bool,
}

/// What the listing says of one model beyond its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// Tokens the server processes for the model.
    pub window: Option<u64>,
    /// The length the model was trained for (Ollama's `context_length`).
    pub trained: Option<u64>,
    /// The context the model is loaded with now (Ollama's `/api/ps`).
    pub loaded: Option<u64>,
    pub capabilities: Option<Capabilities>,
}

fn number(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).filter(|n| *n > 0)
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

impl Facts {
    /// An entry of an OpenAI-style `/models` list (vLLM, OpenRouter, Groq,
    /// Mistral, Together, LM Studio's `/api/v0/models`).
    pub fn of_list_entry(entry: &Value) -> Facts {
        let window =
            ["max_model_len", "loaded_context_length", "context_length", "context_window", "max_context_length"]
                .iter()
                .find_map(|k| number(entry.get(*k)))
                // LM Studio names every downloaded model's trained length
                // `max_context_length`: a model not loaded yet gets the context it
                // is loaded with, unknown here.
                .filter(|_| {
                    entry.get("state").and_then(Value::as_str).is_none_or(|s| s == "loaded")
                        || entry.get("loaded_context_length").is_some()
                });
        let supported: Vec<&str> = strings(entry.get("supported_parameters")).collect();
        let modalities: Vec<&str> = strings(entry.pointer("/architecture/input_modalities")).collect();
        let listed: Vec<&str> = strings(entry.get("capabilities")).collect();
        let flags = entry.get("capabilities").filter(|c| c.is_object());
        let flag = |k: &str| flags.and_then(|f| f.get(k)).and_then(Value::as_bool).unwrap_or(false);
        let capabilities = if !supported.is_empty() || !modalities.is_empty() {
            Some(Capabilities {
                tools: supported.contains(&"tools"),
                thinking: supported.contains(&"reasoning"),
                vision: modalities.contains(&"image"),
            })
        } else if flags.is_some() {
            Some(Capabilities { tools: flag("function_calling"), thinking: flag("reasoning"), vision: flag("vision") })
        } else if entry.get("capabilities").is_some_and(Value::is_array) {
            // LM Studio: `capabilities: ["tool_use"]`, `type: "vlm"` for vision.
            let vision = entry.get("type").and_then(Value::as_str) == Some("vlm");
            Some(Capabilities {
                tools: listed.contains(&"tool_use") || listed.contains(&"tools"),
                thinking: listed.contains(&"thinking") || listed.contains(&"reasoning"),
                vision,
            })
        } else {
            None
        };
        Facts { window, capabilities, ..Facts::default() }
    }

    /// Ollama's `/api/show` answer: the trained length and the capabilities.
    pub fn of_ollama_show(show: &Value) -> Facts {
        let info = show.get("model_info");
        let arch = info.and_then(|i| i.get("general.architecture")).and_then(Value::as_str);
        let trained = arch.and_then(|a| number(info?.get(format!("{a}.context_length")))).or_else(|| {
            info?.as_object()?.iter().find(|(k, _)| k.ends_with(".context_length")).and_then(|(_, v)| number(Some(v)))
        });
        let listed: Vec<&str> = strings(show.get("capabilities")).collect();
        let capabilities = (!listed.is_empty()).then(|| Capabilities {
            tools: listed.contains(&"tools"),
            thinking: listed.contains(&"thinking"),
            vision: listed.contains(&"vision"),
        });
        Facts { trained, capabilities, ..Facts::default() }
    }

    /// The window the proxy gives an Ollama model: its trained length, capped
    /// at `ceiling` (a memory-safe bound on what the proxy asks for) unless
    /// the server already runs the model with more.
    pub fn window_for_ollama(&mut self, ceiling: u64) {
        let cap = self.loaded.map_or(ceiling, |loaded| loaded.max(ceiling));
        self.window = Some(self.trained.map_or(cap, |trained| trained.min(cap)));
    }
}

/// The context each loaded model of Ollama's `/api/ps` answer runs with.
pub fn ollama_loaded(ps: &Value) -> Vec<(String, u64)> {
    let models = ps.get("models").and_then(Value::as_array).into_iter().flatten();
    models
        .filter_map(|m| {
            let id = m.get("name").or_else(|| m.get("model"))?.as_str()?;
            Some((id.to_owned(), number(m.get("context_length"))?))
        })
        .collect()
}

/// llama.cpp's `/props`: the context of one slot and, where it says (newer
/// builds: `chat_template_caps`, `modalities`), what the model can do.
pub fn of_llama_cpp_props(props: &Value) -> Facts {
    let window = number(props.pointer("/default_generation_settings/n_ctx")).or_else(|| number(props.get("n_ctx")));
    let caps = props.get("chat_template_caps").filter(|c| c.is_object());
    let flag = |keys: &[&str]| keys.iter().any(|k| caps.and_then(|c| c.get(*k)).and_then(Value::as_bool) == Some(true));
    let capabilities = caps.map(|_| Capabilities {
        tools: flag(&["supports_tools", "supports_tool_calls"]),
        thinking: flag(&["supports_reasoning", "supports_preserve_reasoning", "supports_enable_thinking"]),
        vision: props.pointer("/modalities/vision").and_then(Value::as_bool).unwrap_or(false),
    });
    Facts { window, capabilities, ..Facts::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_servers_listing_is_read() {
        // Shapes as each server documents them.
        let cases = [
            // vLLM's /v1/models.
            (
                json!({"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "max_model_len": 32768}),
                Some(32768),
                None,
            ),
            // OpenRouter's /models.
            (
                json!({"id": "deepseek/deepseek-r1", "context_length": 163840, "architecture": {"input_modalities": ["text"]},
                       "supported_parameters": ["reasoning", "tools", "temperature"]}),
                Some(163840),
                Some(Capabilities { tools: true, thinking: true, vision: false }),
            ),
            // Groq and Mistral.
            (json!({"id": "llama-3.3-70b-versatile", "context_window": 131072}), Some(131072), None),
            (
                json!({"id": "mistral-small-latest", "max_context_length": 131072, "capabilities": {"function_calling": true, "vision": true}}),
                Some(131072),
                Some(Capabilities { tools: true, thinking: false, vision: true }),
            ),
            // LM Studio's /api/v0/models: loaded, and not loaded yet.
            (
                json!({"id": "qwen2-vl-7b-instruct", "type": "vlm", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 8192, "capabilities": ["tool_use"]}),
                Some(8192),
                Some(Capabilities { tools: true, thinking: false, vision: true }),
            ),
            (
                json!({"id": "meta-llama-3.1-8b-instruct", "type": "llm", "state": "not-loaded", "max_context_length": 131072}),
                None,
                None,
            ),
            // A bare OpenAI-style entry says nothing.
            (json!({"id": "gpt-4o", "object": "model", "owned_by": "openai"}), None, None),
        ];
        for (entry, window, capabilities) in cases {
            let facts = Facts::of_list_entry(&entry);
            assert_eq!((facts.window, facts.capabilities), (window, capabilities), "{entry}");
        }
    }

    #[test]
    fn ollama_says_the_trained_length_the_loaded_one_and_what_a_model_can_do() {
        let show = json!({"details": {"family": "qwen3"}, "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960,
                          "qwen3.block_count": 36}, "capabilities": ["completion", "tools", "thinking"]});
        let mut facts = Facts::of_ollama_show(&show);
        assert_eq!(facts.trained, Some(40960));
        assert_eq!(facts.capabilities, Some(Capabilities { tools: true, thinking: true, vision: false }));
        facts.window_for_ollama(32768);
        assert_eq!(facts.window, Some(32768), "capped at the ceiling");
        facts.loaded = Some(65536);
        facts.window_for_ollama(32768);
        assert_eq!(facts.window, Some(40960), "the server runs it with more: up to its trained length");
        let mut small = Facts::of_ollama_show(
            &json!({"model_info": {"general.architecture": "gemma2", "gemma2.context_length": 8192}}),
        );
        small.window_for_ollama(32768);
        assert_eq!((small.window, small.capabilities), (Some(8192), None));
        let ps =
            json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}, {"name": "old:1b"}]});
        assert_eq!(ollama_loaded(&ps), vec![("qwen3:8b".to_owned(), 4096)]);
    }

    #[test]
    fn llama_cpp_props_say_the_slot_context() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192, "params": {}}, "total_slots": 4,
                           "modalities": {"vision": true}, "chat_template_caps": {"supports_tools": true, "supports_system_role": true}});
        let facts = of_llama_cpp_props(&props);
        assert_eq!(facts.window, Some(8192));
        assert_eq!(facts.capabilities, Some(Capabilities { tools: true, thinking: false, vision: true }));
        let old = of_llama_cpp_props(&json!({"default_generation_settings": {"n_ctx": 4096}}));
        assert_eq!((old.window, old.capabilities), (Some(4096), None), "an older build says nothing of tools");
        assert_eq!(of_llama_cpp_props(&json!({})).window, None);
    }
}
