// A tool that fails: served with isError.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Always fails.',
  execute: async () => ({ status: 'error', error: 'This tool intentionally returns an error for testing' }),
});
