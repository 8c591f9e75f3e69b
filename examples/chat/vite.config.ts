import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `lifeline` and `lifeline/react` resolve through the package's own `exports` to dist/,
// exactly what an app installing the package gets (so `npm run build` runs first).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  logLevel: 'warn',
});
