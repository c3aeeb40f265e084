//! TypeScript tool files, stripped of their types at load: the file is parsed with a Rust
//! TypeScript parser (oxc), and every piece of TypeScript-only syntax is replaced by spaces, so
//! that what is left is the file's JavaScript at the same lines and columns (stacks and errors
//! point into the file as written). No Node, no compiler, nothing generated.
//!
//! Erased: type annotations, type parameters and arguments, `interface` and `type`
//! declarations, `import type` / `export type` (whole or per name), `as` / `satisfies` casts,
//! non-null `!`, `<T>x` assertions, optional-parameter `?`, `declare` statements and
//! `implements` clauses. Refused, naming the line: syntax that has a meaning at run time and so
//! cannot be erased (`enum`, `namespace`, parameter properties such as
//! `constructor(private x)`), and class member modifiers (`public`, `private`, `readonly`,
//! `abstract`), which this stripper does not erase.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Class, Declaration, ExportDeclaration, ExportFromDeclaration, ExportNamedDeclaration,
    ExportSpecifier, FormalParameter, ImportDeclaration, ImportDeclarationSpecifier,
    ImportOrExportKind, MethodDefinition, PropertyDefinition, Statement, TSAsExpression,
    TSNonNullExpression, TSSatisfiesExpression, TSTypeAnnotation, TSTypeAssertion,
    TSTypeParameterDeclaration, TSTypeParameterInstantiation,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType, Span};

/// `source` (TypeScript) as JavaScript with the same lines and columns, or why it cannot be.
pub(crate) fn strip_types(source: &str) -> Result<String, String> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::ts()).parse();
    if let Some(error) = parsed.diagnostics.errors().next() {
        let at = error
            .labels
            .first()
            .map(|label| format!("line {}: ", line_of(source, label.offset() as usize)))
            .unwrap_or_default();
        return Err(format!("{at}{}", error.message));
    }
    let mut strip = Stripper {
        source,
        blanks: Vec::new(),
        refused: None,
    };
    strip.visit_program(&parsed.program);
    if let Some((offset, why)) = strip.refused {
        return Err(format!("line {}: {why}", line_of(source, offset)));
    }
    let mut bytes = source.as_bytes().to_vec();
    for (start, end) in strip.blanks {
        for b in &mut bytes[start..end] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    // Only whole characters were replaced, by ASCII spaces: still UTF-8.
    String::from_utf8(bytes).map_err(|e| format!("stripping broke the text: {e}"))
}

/// The line (from 1) of a byte offset.
fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

struct Stripper<'s> {
    source: &'s str,
    blanks: Vec<(usize, usize)>,
    refused: Option<(usize, String)>,
}

impl Stripper<'_> {
    fn blank(&mut self, span: Span) {
        self.blanks.push((span.start as usize, span.end as usize));
    }

    fn blank_range(&mut self, start: u32, end: u32) {
        if start < end {
            self.blanks.push((start as usize, end as usize));
        }
    }

    fn refuse(&mut self, at: u32, why: &str) {
        if self.refused.is_none() {
            self.refused = Some((at as usize, why.to_owned()));
        }
    }

    /// Blanks `span` and a comma right after it (a type-only name in a list of names).
    fn blank_listed(&mut self, span: Span) {
        let mut end = span.end as usize;
        let rest = &self.source[end..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with(',') {
            end += skipped + 1;
        }
        self.blanks.push((span.start as usize, end));
    }

    /// Blanks a `?` or `!` marker between `from` and the next non-space character.
    fn blank_marker(&mut self, from: u32) {
        let rest = &self.source[from as usize..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with(['?', '!']) {
            let at = from as usize + skipped;
            self.blanks.push((at, at + 1));
        }
    }
}

impl<'a> Visit<'a> for Stripper<'_> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        match it {
            Statement::TSInterfaceDeclaration(_) | Statement::TSTypeAliasDeclaration(_) => {
                self.blank(it.span())
            }
            Statement::TSEnumDeclaration(e) if e.declare => self.blank(it.span()),
            Statement::TSNamespaceDeclaration(m) if m.declare => self.blank(it.span()),
            Statement::TSGlobalDeclaration(_) | Statement::TSExternalModuleDeclaration(_) => {
                self.blank(it.span())
            }
            Statement::TSEnumDeclaration(_) => self.refuse(
                it.span().start,
                "`enum` has a meaning at run time and cannot be stripped; use an object or a union of strings",
            ),
            Statement::TSNamespaceDeclaration(_) => self.refuse(
                it.span().start,
                "`namespace` has a meaning at run time and cannot be stripped; use a module",
            ),
            Statement::TSImportEqualsDeclaration(_) | Statement::TSExportAssignment(_) => self
                .refuse(
                    it.span().start,
                    "`import x = require(...)` and `export =` are not ES modules; use import and export",
                ),
            Statement::VariableDeclaration(v) if v.declare => self.blank(it.span()),
            Statement::ClassDeclaration(c) if c.declare => self.blank(it.span()),
            Statement::FunctionDeclaration(f) if f.declare || f.body.is_none() => {
                // An overload signature, or `declare function`.
                self.blank(it.span())
            }
            _ => walk::walk_statement(self, it),
        }
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        if it.import_kind == ImportOrExportKind::Type {
            self.blank(it.span);
            return;
        }
        walk::walk_import_declaration(self, it);
    }

    fn visit_import_declaration_specifier(&mut self, it: &ImportDeclarationSpecifier<'a>) {
        if let ImportDeclarationSpecifier::ImportSpecifier(s) = it {
            if s.import_kind == ImportOrExportKind::Type {
                self.blank_listed(s.span);
            }
        }
    }

    fn visit_export_declaration(&mut self, it: &ExportDeclaration<'a>) {
        let type_only = it.declaration.is_typescript_syntax()
            || matches!(&it.declaration, Declaration::FunctionDeclaration(f) if f.body.is_none());
        if type_only {
            self.blank(it.span);
            return;
        }
        walk::walk_export_declaration(self, it);
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        if it.export_kind == ImportOrExportKind::Type {
            self.blank(it.span);
            return;
        }
        walk::walk_export_named_declaration(self, it);
    }

    fn visit_export_from_declaration(&mut self, it: &ExportFromDeclaration<'a>) {
        if it.export_kind == ImportOrExportKind::Type {
            self.blank(it.span);
            return;
        }
        walk::walk_export_from_declaration(self, it);
    }

    fn visit_export_specifier(&mut self, it: &ExportSpecifier<'a>) {
        if it.export_kind == ImportOrExportKind::Type {
            self.blank_listed(it.span);
        }
    }

    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.blank_range(it.span.start, it.expression.span().start);
        self.visit_expression(&it.expression);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(
                it.span.start,
                "a parameter property (`constructor(private x)`) assigns at run time and cannot be stripped; assign in the constructor's body",
            );
            return;
        }
        if it.optional {
            self.blank_marker(it.pattern.span().end);
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.r#abstract {
            self.refuse(
                it.span.start,
                "`abstract` classes are not stripped; drop `abstract`",
            );
            return;
        }
        if let Some(first) = it.implements.first() {
            // From the `implements` keyword to the end of the last name.
            let before = &self.source[..first.span.start as usize];
            if let Some(keyword) = before.rfind("implements") {
                let end = it.implements.last().map_or(first.span.end, |l| l.span.end);
                self.blank_range(keyword as u32, end);
            }
        }
        walk::walk_class(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override || it.declare {
            self.refuse(
                it.span.start,
                "class member modifiers (`public`, `private`, `protected`, `readonly`, `override`, `declare`) are not stripped; drop them",
            );
            return;
        }
        if it.optional || it.definite {
            self.blank_marker(it.key.span().end);
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        if it.accessibility.is_some() || it.r#override {
            self.refuse(
                it.span.start,
                "class member modifiers (`public`, `private`, `protected`, `override`) are not stripped; drop them",
            );
            return;
        }
        if it.value.body.is_none() {
            // An overload signature.
            self.blank(it.span);
            return;
        }
        walk::walk_method_definition(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(ts: &str) -> String {
        strip_types(ts).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn types_become_spaces_and_the_code_stays_where_it_was() {
        let ts = "import type { A } from './a.js';\nimport { type B, c } from './b.js';\ninterface P { x: number }\ntype Q = string | number;\nexport function f<T>(a: number, b?: string): T | null {\n  const v = (a as unknown) as number;\n  return g<T>(v!, b satisfies string | undefined);\n}\n";
        let out = js(ts);
        assert_eq!(out.len(), ts.len());
        assert_eq!(out.lines().count(), ts.lines().count());
        let squeezed: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            squeezed,
            "import { c } from './b.js'; export function f (a , b ) { const v = (a ) ; return g (v , b ); }"
        );
    }

    #[test]
    fn syntax_with_a_run_time_meaning_is_refused_with_its_line() {
        let err = strip_types("const a = 1;\nenum Color { Red }\n").unwrap_err();
        assert!(err.starts_with("line 2:") && err.contains("enum"), "{err}");
        let err = strip_types("class K {\n  constructor(private x: number) {}\n}\n").unwrap_err();
        assert!(
            err.starts_with("line 2:") && err.contains("parameter property"),
            "{err}"
        );
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let err = strip_types("const a = 1;\nconst = ;\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }
}
