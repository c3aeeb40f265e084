// What resource template test://template/{id}/data reads: a read-only tool, run with the
// template's values as its arguments.
import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

export default defineTool({
  description: 'Gives the data of one ID as JSON (read by a resource template).',
  args: z.object({ id: z.string().describe('The ID') }),
  annotations: { readOnlyHint: true },
  execute: async (_state, args) => JSON.stringify({ id: args.id, templateTest: true, data: `Data for ID: ${args.id}` }),
});
