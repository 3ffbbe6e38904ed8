import { render } from 'preact';
import '@picocss/pico/css/pico.min.css';
import './console.css';
import { App } from './app.js';

render(<App />, document.getElementById('app')!);
