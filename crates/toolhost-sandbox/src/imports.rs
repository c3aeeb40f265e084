//! A run's imports: only the modules the caller gave, by the exact specifier given.

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Module};
use std::collections::BTreeMap;

/// Resolves an import specifier only when the run was given a module of exactly that name.
pub(crate) struct Imports {
    names: Vec<String>,
}

impl Imports {
    pub(crate) fn new(names: Vec<String>) -> Self {
        Imports { names }
    }
}

impl Resolver for Imports {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if self.names.iter().any(|n| n == name) {
            return Ok(name.to_owned());
        }
        let given = if self.names.is_empty() {
            "none".to_owned()
        } else {
            self.names.join(", ")
        };
        Err(rquickjs::Error::new_resolving_message(
            base,
            name,
            format!("`{name}` was not given to this run; the modules it may import: {given}"),
        ))
    }
}

/// The source text of the given modules.
pub(crate) struct Sources(pub(crate) BTreeMap<String, String>);

impl Loader for Sources {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        match self.0.get(name) {
            Some(source) => Module::declare(ctx.clone(), name, source.as_str()),
            None => Err(rquickjs::Error::new_loading_message(
                name,
                "not given to this run",
            )),
        }
    }
}
