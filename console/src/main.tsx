import { render } from 'preact';
import '@picocss/pico/css/pico.min.css';
import './console.css';
import { App, boot } from './app.js';

// the bench (bench/console-load.ts) reads when the script got to run
performance.mark('gantry-boot');
boot();
render(<App />, document.getElementById('app')!);
