import { defineTool } from '@standardagents/spec';
import { z } from 'zod';

// The spec's example calls a weather service; this stand-in answers in its place, so the
// example runs anywhere.
async function fetchWeather(location: string, units: 'celsius' | 'fahrenheit') {
  return { location, units, temperature: units === 'celsius' ? 21 : 70, conditions: 'sunny' };
}

export default defineTool({
  description: 'Get the current weather for a location',
  args: z.object({
    location: z.string().describe('City name or coordinates'),
    units: z.enum(['celsius', 'fahrenheit']).default('celsius'),
  }),
  execute: async (state, args) => {
    const weather = await fetchWeather(args.location, args.units);
    return {
      status: 'success',
      result: JSON.stringify(weather),
    };
  },
});
