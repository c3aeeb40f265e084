// Progress: sent to a client that gave a progressToken.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Says how far it is three times, then answers.',
  execute: async (state) => {
    for (const done of [0, 50, 100]) {
      await state.progress(done, 100, `${done} of 100`);
    }
    return 'Progress reported at 0, 50 and 100 of 100.';
  },
});
