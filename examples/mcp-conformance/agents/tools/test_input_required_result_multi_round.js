// Asks two questions one after the other: the second only once the first is answered.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Asks the user two questions in turn.',
  execute: async (state) => {
    const first = await state.elicit('Step 1: What is your name?', { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, { key: 'step1' });
    const second = await state.elicit('Step 2: What is your favorite color?', { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] }, { key: 'step2' });
    return `${first.content?.name} likes ${second.content?.color}`;
  },
});
