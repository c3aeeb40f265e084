//! The model factory: how a runtime gets the models of a project's definitions without
//! depending on any adapter.

use std::sync::Arc;
use toolhost_providers::{ConfigError, Model, ModelConfig};

/// Builds the model a definition of the project describes.
///
/// The runtime depends on the [`Model`] contract, never on an adapter: the program that embeds
/// it hands [`super::Runtime::load_with`] a factory. The command line passes
/// `toolhost_providers::model_from_env` (the providers crate's `http` feature); a test can pass
/// a closure that builds doubles or reads keys from a map.
///
/// The runtime asks once per model definition whose provider is not `test` (it reads the
/// scripted model's script from the project itself), while the project loads, with the
/// definition as plain data: provider, model id, base URL, the name of the key's variable,
/// settings, retries and time limits. An error does not make the definition a problem of the
/// project: the model is unavailable, and a thread (or [`super::Runtime::override_model`]) that
/// uses it fails with the error's message, which names the variable of a missing key
/// ([`ConfigError::MissingKey`]).
///
/// Any `Fn(&ModelConfig) -> Result<Arc<dyn Model>, ConfigError>` is a factory.
pub trait ModelFactory: Send + Sync {
    /// The model `config` describes, or why it cannot be used.
    fn model(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, ConfigError>;
}

impl<F> ModelFactory for F
where
    F: Fn(&ModelConfig) -> Result<Arc<dyn Model>, ConfigError> + Send + Sync,
{
    fn model(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, ConfigError> {
        self(config)
    }
}
