// Logging: what the tool writes to its console reaches an MCP client as log messages while
// the call runs. (Tool files have no timers, so the suite's suggested pauses are left out.)
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Logs three lines while it works, then answers.',
  execute: async () => {
    console.info('Tool execution started');
    console.info('Tool processing data');
    console.info('Tool execution completed');
    return 'Logged three messages.';
  },
});
