// A small text file: served as an embedded resource.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Answers with a text file.',
  execute: async () => ({
    status: 'success',
    result: 'A text file, attached.',
    attachments: [{ name: 'embedded.txt', mimeType: 'text/plain', data: 'VGhpcyBpcyBhbiBlbWJlZGRlZCByZXNvdXJjZSBjb250ZW50Lg==' }],
  }),
});
