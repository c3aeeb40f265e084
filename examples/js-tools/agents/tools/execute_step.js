import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

// The step the workflow queues: it records that it ran in the thread's storage.
export default defineTool({
  description: 'Run one step of a workflow',
  args: z.object({
    workflowId: z.string(),
    step: z.number().int().min(1),
  }),
  execute: async (state, args) => {
    await state.storage.put(`workflow:${args.workflowId}`, { step: args.step, done: true });
    return `Step ${args.step} of ${args.workflowId} done`;
  },
});
