// Logs while it works: a client hears the lines only when its request asks for a log level.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Logs two lines, then answers.',
  execute: async () => {
    console.info('Logging tool started');
    console.info('Logging tool done');
    return 'Logged two messages.';
  },
});
