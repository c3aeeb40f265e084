// Text only.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Answers with a fixed sentence.',
  execute: async () => 'This is a simple text response for testing.',
});
