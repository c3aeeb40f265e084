import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

interface Ticket {
  id: number;
  title: string;
}

// The spec's example calls a ticket system; this stand-in numbers tickets in the thread's
// storage instead.
async function createTicket(args: { title: string }, state: any): Promise<Ticket> {
  const last = ((await state.storage.get('last_ticket')) as number | null) ?? 1041;
  await state.storage.put('last_ticket', last + 1);
  return { id: last + 1, title: args.title };
}

export default defineTool({
  description: 'Create a support ticket',
  args: z.object({
    title: z.string().min(5).max(200).describe('Ticket title'),
    description: z.string().describe('Detailed description'),
    priority: z.enum(['low', 'medium', 'high', 'urgent']).default('medium'),
    category: z.string().describe('Ticket category'),
    tags: z.array(z.string()).optional().describe('Optional tags'),
    assignee: z.string().optional().describe('User ID to assign to'),
  }),
  execute: async (state, args) => {
    const ticket = await createTicket(args, state);
    return {
      status: 'success',
      result: `Created ticket #${ticket.id}: ${ticket.title}`,
    };
  },
});
