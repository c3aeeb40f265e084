//! A run's imports: only the modules the caller gave, by the exact specifier given. A relative
//! specifier (`./x.js`, `../lib/y.js`) written in a given module is first resolved against that
//! module's name as a path (`agents/tools/a.js` importing `./b.js` asks for `agents/tools/b.js`);
//! it too must name a given module.

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
        if let Some(joined) = relative_to(base, name) {
            if self.names.contains(&joined) {
                return Ok(joined);
            }
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

/// `name` resolved against the folder of the module `base`, when `name` is relative; `None`
/// when it is not, or climbs above the root of the names.
pub(crate) fn relative_to(base: &str, name: &str) -> Option<String> {
    if !(name.starts_with("./") || name.starts_with("../")) {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for part in name.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::relative_to;

    #[test]
    fn a_relative_specifier_is_read_from_the_importing_modules_folder() {
        let at = "agents/tools/a.js";
        assert_eq!(
            relative_to(at, "./b.js").as_deref(),
            Some("agents/tools/b.js")
        );
        assert_eq!(
            relative_to(at, "../lib/c.js").as_deref(),
            Some("agents/lib/c.js")
        );
        assert_eq!(relative_to(at, "zod"), None);
        assert_eq!(relative_to(at, "../../../x.js"), None);
    }
}
