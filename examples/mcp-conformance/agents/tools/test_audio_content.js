// An audio file: served as MCP audio content.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Answers with ten milliseconds of silence as a WAV file.',
  execute: async () => ({
    status: 'success',
    result: 'Ten milliseconds of silence, attached.',
    attachments: [{ name: 'silence.wav', mimeType: 'audio/wav', data: 'UklGRnQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YVAAAACAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgA==' }],
  }),
});
