// An image file: served as MCP image content.
import { defineTool } from '@standardagents/spec';

export default defineTool({
  description: 'Answers with a picture of one red pixel.',
  execute: async () => ({
    status: 'success',
    result: 'One red pixel, attached.',
    attachments: [{ name: 'red-pixel.png', mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC' }],
  }),
});
